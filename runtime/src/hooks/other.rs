//! Targets with neither pthread keys nor fiber-local storage: no hook at
//! thread exit, so every call is served per call.

use crate::context::ContextNode;

pub(crate) const HAS_THREAD_EXIT_HOOK: bool = false;

pub(crate) fn exit_hook_ready() -> bool {
    false
}

pub(crate) fn register_exit_hook(_node: &'static ContextNode) {
    unreachable!("per-call only on this platform")
}

/// Frees the last error with the thread's Rust thread-locals (a message
/// set after that leaks).
struct FreeOnExit;

impl Drop for FreeOnExit {
    fn drop(&mut self) {
        crate::last_error::discard();
    }
}

thread_local! {
    static FREE_ON_EXIT: FreeOnExit = const { FreeOnExit };
}

#[cold]
pub(crate) fn arm_exit_hook() {
    let _ = FREE_ON_EXIT.try_with(|_| ());
}

pub(crate) fn handle_fork() {}

/// Nothing unloads a library under a running thread here.
pub(crate) struct LibraryHold;

impl LibraryHold {
    pub(crate) fn take() -> LibraryHold {
        LibraryHold
    }

    pub(crate) fn until_thread_exit(self) {}
}
