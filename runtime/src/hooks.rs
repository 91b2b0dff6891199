//! The hooks C calls into the runtime, and their registration: the exit
//! hook that releases a thread's context, the `fork` handlers, and the
//! `dlopen` pin that keeps a pending exit hook's code mapped. They are the
//! only code that calls up the layers (into [`thread`](crate::thread),
//! [`last_error`](mod@crate::last_error), [`init`](mod@crate::init)), from
//! outside every callback. Platform code sits behind a `cfg`-selected
//! `mod imp`.

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
