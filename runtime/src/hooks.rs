//! The hooks C calls into the runtime, and their registration: the pthread
//! key whose destructor releases an exiting thread's context, the `fork`
//! child handler, and the `dlopen` pin that keeps the code of a pending key
//! destructor mapped.
//!
//! The C-invoked functions here are the only code of the runtime that calls
//! up its layers: C runs them outside every callback, and they hand over to
//! [`thread`](crate::thread) (release at thread exit, reclaiming contexts
//! after `fork`), [`last_error`](mod@crate::last_error) (freeing the message
//! at thread exit) and [`init`](mod@crate::init) (failing an init that `fork`
//! left behind). Everything else here is called from above: by `thread`
//! when it binds, by `last_error` when it sets a message, by `init` at load
//! time.
//!
//! Unloading: a library destructor deletes the key and frees the context
//! pool, the last-error messages, the `#[local]` registry and the kept
//! allocations of dropped closures when the library is unloaded with no
//! thread bound (bound threads pin it, so it is never unloaded under them);
//! a background init holds the library loaded until its thread has exited
//! ([`LibraryHold`]).
//!
//! Platform code sits behind a `cfg`-selected `mod imp`: pthread keys and
//! `pthread_atfork` on unix; a fiber-local-storage (FLS) callback on Windows;
//! elsewhere no hook at thread exit (every call is served per call) and a
//! `thread_local!` destructor to free the message.

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
