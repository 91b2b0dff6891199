//! Windows: a fiber-local-storage (FLS) slot whose callback releases an
//! exiting thread's context and frees its last error.
//!
//! Why FLS rather than a TLS callback or `DLL_THREAD_DETACH`: those run
//! under the loader lock, where `Local::release` code that loads a library,
//! waits on another thread or takes a lock a loading thread holds would
//! deadlock. The FLS callback of a thread's fiber runs when the thread
//! exits, before the loader lock is taken (the mechanism .NET and jni-rs
//! moved their per-thread detach to for this reason). Only FLS has a
//! callback at all: `TlsAlloc` slots have none.
//!
//! FLS is per fiber, the context slot per thread. The callback acts only
//! when the calling thread's context slot holds the node it was given: the
//! thread's current fiber exiting with the thread, or a fiber of the thread
//! deleted while the thread goes on (the thread is then served per call
//! from there on, which is correct if slower). `FlsFree` and `DeleteFiber`
//! from another thread run the callback on *that* thread for a value that
//! is not its own; then nothing is done and the context stays bound to the
//! thread that owns it.
//!
//! The four functions are declared here rather than taken from a bindings
//! crate: four signatures of `kernel32`, which std links already, do not
//! justify a dependency.

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
}

/// The FLS index + 1, 0 before it exists, or [`NO_INDEX`].
static INDEX: AtomicUsize = AtomicUsize::new(0);
/// `INDEX` once `FlsAlloc` failed: the process has no FLS index left.
/// Above every index + 1.
const NO_INDEX: usize = usize::MAX;
static PIN: Once = Once::new();

/// The FLS value of a thread that is not bound but has a last-error message
/// to free at exit.
static ERROR_ONLY: u8 = 0;

fn error_only() -> *const c_void {
    (&raw const ERROR_ONLY).cast()
}

/// Makes sure the thread's exit callback runs even if the thread is not
/// bound: to free its last-error message, or to release a per-call context
/// whose outermost call never returned. A no-op if it is armed already.
#[cold]
pub(crate) fn arm_exit_hook() {
    let Some(index) = index() else { return };
    // SAFETY: `index` is a live FLS index from `index()`, never freed
    // once published.
    if unsafe { FlsGetValue(index) }.is_null() {
        set_value(index, error_only());
        PIN.call_once(pin_this_module);
    }
}

/// True when threads have an exit hook: the FLS index exists, or has just
/// been allocated. False once allocating it failed; the caller then serves
/// the thread per call (see the README's Known limits).
pub(crate) fn exit_hook_ready() -> bool {
    index().is_some()
}

/// Stores `node`, the context just bound to the calling thread, in the FLS
/// slot, so `on_fiber_exit` releases it when the thread exits. Called only
/// once [`exit_hook_ready`] returned true.
pub(crate) fn register_exit_hook(node: &'static ContextNode) {
    let Some(index) = index() else {
        unreachable!("a thread was bound without an exit hook")
    };
    set_value(index, (node as *const ContextNode).cast());
    PIN.call_once(pin_this_module);
}

/// No `fork` on Windows.
pub(crate) fn handle_fork() {}

/// A background init holds nothing on Windows: it starts only at the
/// first gated call, after `DllMain`, and `FreeLibrary` while it runs is
/// the host's to avoid (README, Platforms).
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
                     on, each call served per call (see Known limits in callgate's README)",
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

/// The FLS callback: a fiber holding a value of ours is going away — the
/// thread exits, or the fiber is deleted.
unsafe extern "system" fn on_fiber_exit(value: *const c_void) {
    if value.is_null() {
        return;
    }
    if !ptr::eq(value, error_only()) && !ptr::eq(crate::tls::get(), value.cast::<ContextNode>()) {
        // Another thread deletes a fiber (or frees the index) that holds a
        // context it does not own; the owner keeps it (module docs).
        return;
    }
    crate::last_error::discard();
    // SAFETY: this thread's fiber is going away, and the context its slot
    // holds, if any, is what the FLS value was armed for. No callback runs
    // on it (an FLS callback runs outside every callback: a thread cannot
    // exit or delete its running fiber from inside one).
    unsafe { crate::thread::release_at_exit() };
}

/// Once a thread is bound, a pending FLS callback points into this
/// module's code, so it must never be unloaded: pin the DLL (a no-op for
/// the main executable), as `RTLD_NODELETE` does on unix.
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
