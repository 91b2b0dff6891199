//! Windows: a fiber-local-storage (FLS) slot whose callback releases an
//! exiting thread's context and frees its last error.
//!
//! FLS rather than a TLS callback or `DLL_THREAD_DETACH`, which run under
//! the loader lock, where a `Local::release` that loads a library or waits
//! on a loading thread would deadlock. The FLS callback runs as the thread
//! exits, before the loader lock is taken.
//!
//! FLS is per fiber, the context slot per thread. The value stored marks
//! its fiber ([`fiber_mark`]), and the callback, run with the value of the
//! fiber data going away, tells two cases apart:
//!
//! - it is the running fiber's: the thread exits. Its context is released
//!   and its last error freed;
//! - it is another fiber's, deleted with `DeleteFiber`: the thread goes on
//!   and keeps its context, and arms its running fiber instead.
//!
//! A thread whose armed fiber another thread deletes has no exit hook until
//! its next call that arms one (the guide's Platforms page).
//!
//! The six `kernel32` functions are declared here: they do not justify a
//! bindings crate.

use core::cell::Cell;
use core::ffi::c_void;
use core::ptr;
use std::sync::Once;

use crate::context::ContextNode;
use crate::diag;
use crate::sync::{AtomicUsize, Ordering};

/// Bound threads are released by the FLS callback when they exit.
pub(crate) const HAS_THREAD_EXIT_HOOK: bool = true;

type FlsCallback = unsafe extern "system" fn(data: *const c_void);

const FLS_OUT_OF_INDEXES: u32 = u32::MAX;
const GET_MODULE_HANDLE_EX_FLAG_PIN: u32 = 0x1;
const GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS: u32 = 0x4;

#[link(name = "kernel32")]
unsafe extern "system" {
    fn FlsAlloc(callback: Option<FlsCallback>) -> u32;
    fn FlsFree(index: u32) -> i32;
    fn FlsGetValue(index: u32) -> *mut c_void;
    fn FlsSetValue(index: u32, data: *const c_void) -> i32;
    fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut *mut c_void) -> i32;
    fn IsThreadAFiber() -> i32;
}

/// The FLS index + 1, 0 before it exists, or [`NO_INDEX`].
static INDEX: AtomicUsize = AtomicUsize::new(0);
/// `INDEX` once `FlsAlloc` failed: the process has no FLS index left.
/// Above every index + 1.
const NO_INDEX: usize = usize::MAX;
static PIN: Once = Once::new();

/// Makes sure the thread's exit callback runs even if the thread is not
/// bound: to free its last-error message, or to release a per-call context
/// whose outermost call never returned. A no-op if the running fiber is
/// armed already.
#[cold]
pub(crate) fn arm_exit_hook() {
    let Some(index) = index() else { return };
    arm(index);
}

/// Stores the running fiber's mark in its FLS slot unless it holds one.
fn arm(index: u32) {
    // SAFETY: `index` is a live FLS index from `index()`, never freed
    // once published.
    if unsafe { FlsGetValue(index) }.is_null() {
        set_value(index, fiber_mark());
        PIN.call_once(pin_this_module);
    }
}

/// The FLS value that marks the running fiber: its address, or while the
/// thread is not a fiber the thread's [`thread_mark`].
fn fiber_mark() -> *const c_void {
    running_fiber().unwrap_or_else(thread_mark)
}

/// The mark of the calling thread while it is not a fiber: an odd number
/// (no fiber's address) from a process-wide count, so no other thread,
/// live or gone, has it: `ConvertThreadToFiber` hands the data holding it
/// to a fiber that can outlive the thread.
fn thread_mark() -> *const c_void {
    thread_local! {
        static MARK: Cell<usize> = const { Cell::new(0) };
    }
    static MARKS: AtomicUsize = AtomicUsize::new(0);
    MARK.with(|mark| {
        if mark.get() == 0 {
            // Relaxed: only the count's uniqueness matters.
            mark.set(MARKS.fetch_add(1, Ordering::Relaxed) * 2 + 1);
        }
        ptr::without_provenance(mark.get())
    })
}

/// The running fiber, or `None` while the thread is not a fiber (or on an
/// architecture whose TEB layout is not read here: then every fiber of a
/// thread shares the thread's mark).
fn running_fiber() -> Option<*const c_void> {
    // SAFETY: no preconditions; reads a flag of the thread's TEB.
    if unsafe { IsThreadAFiber() } == 0 {
        return None;
    }
    fiber_data()
}

/// The TEB's `NT_TIB::FiberData`: the running fiber's address once the
/// thread is a fiber. What `GetCurrentFiber` reads (an inline function of
/// `winnt.h`, not an export).
#[cfg(target_arch = "x86_64")]
fn fiber_data() -> Option<*const c_void> {
    let fiber: *const c_void;
    // SAFETY: a load from the calling thread's own TEB, which `gs` points
    // to on x86-64 Windows; `FiberData` is at 0x20 in `NT_TIB`.
    unsafe {
        core::arch::asm!("mov {}, gs:[0x20]", out(reg) fiber, options(nostack, readonly, preserves_flags));
    }
    Some(fiber)
}

#[cfg(target_arch = "aarch64")]
fn fiber_data() -> Option<*const c_void> {
    let fiber: *const c_void;
    // SAFETY: a load from the calling thread's own TEB, which `x18` points
    // to on ARM64 Windows; `FiberData` is at 0x20 in `NT_TIB`.
    unsafe {
        core::arch::asm!("ldr {}, [x18, #0x20]", out(reg) fiber, options(nostack, readonly, preserves_flags));
    }
    Some(fiber)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn fiber_data() -> Option<*const c_void> {
    None
}

/// True when threads have an exit hook: the FLS index exists, or has just
/// been allocated. False once allocating it failed; the caller then serves
/// the thread per call (see the guide's Known limits).
pub(crate) fn exit_hook_ready() -> bool {
    index().is_some()
}

/// Arms the running fiber, so `on_fiber_exit` releases `_node`, the
/// context just bound to the calling thread, when the thread exits.
/// Called only once [`exit_hook_ready`] returned true.
pub(crate) fn register_exit_hook(_node: &'static ContextNode) {
    let Some(index) = index() else {
        unreachable!("a thread was bound without an exit hook")
    };
    arm(index);
}

/// No `fork` on Windows.
pub(crate) fn handle_fork() {}

/// A background init holds nothing on Windows: it starts only at the
/// first gated call, after `DllMain`, and `FreeLibrary` while it runs is
/// the host's to avoid (the guide's Platforms page).
pub(crate) struct LibraryHold;

impl LibraryHold {
    pub(crate) fn take() -> LibraryHold {
        LibraryHold
    }

    pub(crate) fn until_thread_exit(self) {}
}

fn set_value(index: u32, value: *const c_void) {
    // SAFETY: `index` is a live FLS index from `index()`.
    if unsafe { FlsSetValue(index, value) } == 0 {
        diag::abort_with("callgate: FlsSetValue failed (out of memory); aborting");
    }
}

/// The process-wide FLS index of this copy of the runtime, allocated on
/// first use; `None` if allocating it failed.
fn index() -> Option<u32> {
    // Acquire: pairs with the AcqRel CAS in `alloc_index`, so the index is
    // allocated before another thread uses it.
    match INDEX.load(Ordering::Acquire) {
        0 => stored_index(alloc_index()),
        stored => stored_index(stored),
    }
}

fn stored_index(stored: usize) -> Option<u32> {
    match stored {
        NO_INDEX => None,
        stored => Some((stored - 1) as u32),
    }
}

/// Allocates the index and publishes it, or [`NO_INDEX`] if the process has
/// none left; returns what `INDEX` holds then. The failure is final for
/// this copy of the runtime, as on Unix.
#[cold]
fn alloc_index() -> usize {
    // SAFETY: `on_fiber_exit` has the callback signature and stays mapped:
    // the module is pinned before any value is stored.
    let index = unsafe { FlsAlloc(Some(on_fiber_exit)) };
    let stored = if index == FLS_OUT_OF_INDEXES {
        NO_INDEX
    } else {
        index as usize + 1
    };
    // AcqRel: Release publishes our index, Acquire reads a winner's.
    match INDEX.compare_exchange(0, stored, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            if stored == NO_INDEX {
                diag::report(
                    "callgate: FlsAlloc failed: the process has no FLS index left; callbacks go \
                     on, each call served per call (see Known limits in callgate's guide)",
                );
            }
            stored
        }
        Err(winner) => {
            if stored != NO_INDEX {
                // SAFETY: we allocated `index` above, nobody else has seen
                // it and no value is stored in it.
                let freed = unsafe { FlsFree(index) };
                debug_assert_ne!(freed, 0);
            }
            winner
        }
    }
}

/// The FLS callback: a fiber's data holding a value of ours goes away —
/// the thread exits, or a fiber is deleted (module docs).
///
/// # Safety
///
/// Called only by Windows, as the callback of this module's FLS index,
/// with the value the going fiber stored there (or null): on the thread
/// whose fiber goes away, so that when it is the running fiber's, the
/// thread is exiting and no callback of its runs again but one that
/// called `ExitThread`.
unsafe extern "system" fn on_fiber_exit(value: *const c_void) {
    if value.is_null() {
        return;
    }
    let Some(index) = index() else { return };
    // SAFETY: `index` is a live FLS index (a value was stored in it).
    let running = unsafe { FlsGetValue(index) };
    if !ptr::eq(running, value) && running_fiber() != Some(value) {
        // Another fiber's data: the thread goes on with what it has, and
        // arms its running fiber (unless it is armed) in case the deleted
        // one carried its hook.
        if crate::thread::holds_context() || crate::last_error::is_set() {
            arm(index);
        }
        return;
    }
    crate::last_error::discard();
    // SAFETY: the running fiber's data is going away, so this thread is
    // exiting (`DeleteFiber` of the running fiber exits the thread). No
    // callback runs on its context but one that called `ExitThread`, which
    // never returns: `release_at_exit` forgets such calls.
    let withdrawn = unsafe { crate::thread::release_at_exit() };
    // SAFETY: just withdrawn from the exiting thread's context, whose calls
    // are all over.
    unsafe { crate::closure::end_hold(withdrawn) };
}

/// Once a fiber holds a value of ours, a pending FLS callback points into
/// this module's code, so the DLL is pinned, as `RTLD_NODELETE` does on
/// unix. The index cannot be freed at unload instead: `FlsFree` runs every
/// fiber's callback under the loader lock.
fn pin_this_module() {
    let mut module = ptr::null_mut();
    // SAFETY: with `FROM_ADDRESS` the name is an address inside the module
    // (our own code); `module` is a valid out-pointer.
    let found = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_PIN | GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS,
            (on_fiber_exit as *const c_void).cast(),
            &mut module,
        )
    };
    // Failing here only leaves the module unloadable by mistake: report it.
    if found == 0 {
        diag::report(
            "callgate: GetModuleHandleExW could not pin the library; unloading it while threads are bound will crash",
        );
    }
}
