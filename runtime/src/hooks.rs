//! The hooks C calls into the runtime, and their registration: the pthread
//! key whose destructor releases an exiting thread's context, the `fork`
//! child handler, and the `dlopen` pin that keeps the code of a pending key
//! destructor mapped.
//!
//! The functions C calls here are the only code of the runtime that calls
//! up its layers (into [`thread`](crate::thread),
//! [`last_error`](mod@crate::last_error), [`init`](mod@crate::init)): C
//! runs them outside every callback.
//!
//! A library unloaded with no thread bound frees what the runtime holds
//! (bound threads pin it); a background init holds the library loaded until
//! its thread has exited ([`LibraryHold`]).
//!
//! Platform code sits behind a `cfg`-selected `mod imp`: pthread keys and
//! `pthread_atfork` on unix, a fiber-local-storage callback on Windows,
//! elsewhere no hook at thread exit (every call is served per call).

pub(crate) use imp::{
    HAS_THREAD_EXIT_HOOK, LibraryHold, arm_exit_hook, exit_hook_ready, handle_fork,
    register_exit_hook,
};

#[cfg(unix)]
#[path = "hooks/unix.rs"]
mod imp;

#[cfg(windows)]
#[path = "hooks/windows.rs"]
mod imp;

#[cfg(not(any(unix, windows)))]
#[path = "hooks/other.rs"]
mod imp;
