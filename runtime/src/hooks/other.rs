//! Targets with neither pthread keys nor fiber-local storage: no hook at
//! thread exit, so every call is served per call, and a `thread_local!`
//! destructor frees the last error.

use crate::context::ContextNode;

/// No portable hook at thread exit: every call is served per call.
pub(crate) const HAS_THREAD_EXIT_HOOK: bool = false;

/// No hook: every thread is served per call.
pub(crate) fn exit_hook_ready() -> bool {
    false
}

pub(crate) fn register_exit_hook(_node: &'static ContextNode) {
    unreachable!("per-call only on this platform")
}

/// Frees the last error when the thread's Rust thread-locals are
/// destroyed (a message set after that leaks: there is no later hook).
struct FreeOnExit;

impl Drop for FreeOnExit {
    fn drop(&mut self) {
        crate::last_error::discard();
    }
}

thread_local! {
    static FREE_ON_EXIT: FreeOnExit = const { FreeOnExit };
}

/// Makes sure the thread's last-error message is freed when it exits.
#[cold]
pub(crate) fn arm_exit_hook() {
    let _ = FREE_ON_EXIT.try_with(|_| ());
}

/// No `fork` here.
pub(crate) fn handle_fork() {}

/// Nothing unloads a library under a running thread here: no hold.
pub(crate) struct LibraryHold;

impl LibraryHold {
    pub(crate) fn take() -> LibraryHold {
        LibraryHold
    }

    pub(crate) fn until_thread_exit(self) {}
}
