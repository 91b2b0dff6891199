//! Windows: a fiber-local-storage (FLS) slot whose callback releases an
//! exiting thread's context and frees its last error. FLS, because TLS
//! callbacks and `DLL_THREAD_DETACH` run under the loader lock, where a
//! `Local::release` that loads a library would deadlock.
//!
//! FLS is per fiber, the context per thread. The value stored marks its
//! fiber ([`fiber_mark`]): when the running fiber's data goes away the
//! thread exits; when another fiber is deleted (`DeleteFiber`), the thread
//! keeps its context and arms its running fiber instead. (A thread whose
//! armed fiber another thread deletes is unarmed until its next arming
//! call: the guide's Platforms page.)

use core::cell::Cell;
use core::ffi::c_void;
use core::ptr;
use std::sync::Once;

use crate::context::ContextNode;
use crate::diag;
use crate::sync::{AtomicUsize, Ordering};

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
/// `INDEX` once `FlsAlloc` failed.
const NO_INDEX: usize = usize::MAX;
static PIN: Once = Once::new();

/// Makes sure the thread's exit callback runs even if it is not bound.
#[cold]
pub(crate) fn arm_exit_hook() {
    let Some(index) = index() else { return };
    arm(index);
}

/// Stores the running fiber's mark in its FLS slot unless it holds one.
fn arm(index: u32) {
    // SAFETY: a live index from `index()`, never freed.
    if unsafe { FlsGetValue(index) }.is_null() {
        set_value(index, fiber_mark());
        PIN.call_once(pin_this_module);
    }
}

/// The running fiber's address, or else the thread's [`thread_mark`].
fn fiber_mark() -> *const c_void {
    running_fiber().unwrap_or_else(thread_mark)
}

/// The calling thread's mark while it is not a fiber: an odd number (no
/// fiber's address) that no other thread, live or gone, has, since
/// `ConvertThreadToFiber` may hand it to a fiber that outlives the thread.
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

/// The running fiber, or `None` while the thread is not a fiber (or the
/// TEB layout is not known: the fibers then share the thread's mark).
fn running_fiber() -> Option<*const c_void> {
    // SAFETY: no preconditions; reads a flag of the thread's TEB.
    if unsafe { IsThreadAFiber() } == 0 {
        return None;
    }
    fiber_data()
}

/// The TEB's `NT_TIB::FiberData`, as `winnt.h`'s inline `GetCurrentFiber`.
#[cfg(target_arch = "x86_64")]
fn fiber_data() -> Option<*const c_void> {
    let fiber: *const c_void;
    // SAFETY: a load from the calling thread's TEB (`gs` on x86-64
    // Windows), `NT_TIB::FiberData` at 0x20.
    unsafe {
        core::arch::asm!("mov {}, gs:[0x20]", out(reg) fiber, options(nostack, readonly, preserves_flags));
    }
    Some(fiber)
}

#[cfg(target_arch = "aarch64")]
fn fiber_data() -> Option<*const c_void> {
    let fiber: *const c_void;
    // SAFETY: as on x86-64, with the TEB at `x18`.
    unsafe {
        core::arch::asm!("ldr {}, [x18, #0x20]", out(reg) fiber, options(nostack, readonly, preserves_flags));
    }
    Some(fiber)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn fiber_data() -> Option<*const c_void> {
    None
}

/// True when threads have an exit hook; false once allocating the index
/// failed (threads are then served per call: Known limits).
pub(crate) fn exit_hook_ready() -> bool {
    index().is_some()
}

/// Arms the running fiber, once [`exit_hook_ready`].
pub(crate) fn register_exit_hook(_node: &'static ContextNode) {
    let Some(index) = index() else {
        unreachable!("a thread was bound without an exit hook")
    };
    arm(index);
}

pub(crate) fn handle_fork() {}

/// A background init holds nothing on Windows: it starts after `DllMain`,
/// and `FreeLibrary` while it runs is the host's to avoid (Platforms page).
pub(crate) struct LibraryHold;

impl LibraryHold {
    pub(crate) fn take() -> LibraryHold {
        LibraryHold
    }

    pub(crate) fn until_thread_exit(self) {}
}

fn set_value(index: u32, value: *const c_void) {
    // SAFETY: a live index from `index()`.
    if unsafe { FlsSetValue(index, value) } == 0 {
        diag::abort_with("callgate: FlsSetValue failed (out of memory); aborting");
    }
}

/// This copy of the runtime's FLS index, allocated on first use.
fn index() -> Option<u32> {
    // Acquire: pairs with the AcqRel CAS in `alloc_index`.
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

/// Allocates and publishes the index, or [`NO_INDEX`] for good, as on unix.
#[cold]
fn alloc_index() -> usize {
    // SAFETY: the callback signature; it stays mapped (the module is pinned
    // before any value is stored).
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
                // SAFETY: ours, unpublished, and holding no value.
                let freed = unsafe { FlsFree(index) };
                debug_assert_ne!(freed, 0);
            }
            winner
        }
    }
}

/// The FLS callback: a fiber's data holding a value of ours goes away
/// (module docs).
///
/// # Safety
///
/// Called only by Windows, as this module's FLS callback, on the thread
/// whose fiber's data goes away, with its value (or null).
unsafe extern "system" fn on_fiber_exit(value: *const c_void) {
    if value.is_null() {
        return;
    }
    let Some(index) = index() else { return };
    // SAFETY: a live index (a value was stored in it).
    let running = unsafe { FlsGetValue(index) };
    if !ptr::eq(running, value) && running_fiber() != Some(value) {
        // Another fiber's: arm the running one, in case that one carried the
        // hook.
        if crate::thread::holds_context() || crate::last_error::is_set() {
            arm(index);
        }
        return;
    }
    crate::last_error::discard();
    // SAFETY: the running fiber's data goes away, so the thread exits; a
    // call still on its context called `ExitThread` and never returns
    // (`release_at_exit` forgets it).
    let withdrawn = unsafe { crate::thread::release_at_exit() };
    // SAFETY: just withdrawn from the exiting thread's context.
    unsafe { crate::closure::end_hold(withdrawn) };
}

/// A pending FLS callback points into this module's code, so the DLL is
/// pinned once a fiber holds a value (freeing the index at unload would
/// run every callback under the loader lock).
fn pin_this_module() {
    let mut module = ptr::null_mut();
    // SAFETY: with `FROM_ADDRESS` the name is an address in our own code;
    // `module` is a valid out-pointer.
    let found = unsafe {
        GetModuleHandleExW(
            GET_MODULE_HANDLE_EX_FLAG_PIN | GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS,
            (on_fiber_exit as *const c_void).cast(),
            &mut module,
        )
    };
    // Failing only leaves the module unloadable by mistake: report it.
    if found == 0 {
        diag::report(
            "callgate: GetModuleHandleExW could not pin the library; unloading it while threads are bound will crash",
        );
    }
}
