//! How a call ends: the body under `catch_unwind`, and an `Err` or a panic
//! turned into the declared fallback plus the thread's last error (or an
//! abort, where the site asks for one).

use core::any::Any;
use core::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::site::{Frame, OnFailure, Site};
use crate::context::ContextNode;
use crate::diag;
use crate::failure::{Failure, callback_name, payload_message};
use crate::settings::{self, PanicMode};
use crate::{last_error, thread};

/// Wraps a plain return value for [`call`](super::call)'s body.
#[hot_path]
pub fn ok<T>(value: T) -> Result<T, Failure> {
    Ok(value)
}

/// Turns the callback's `Result` into [`call`](super::call)'s body result;
/// the error's `Display` text becomes the last error.
#[hot_path]
pub fn from_result<T, E: Display>(result: Result<T, E>) -> Result<T, Failure> {
    result.map_err(|error| Failure::from_display(&error))
}

/// Runs the body under `catch_unwind`, with the guard that names the
/// callback if a foreign unwind reaches a landing pad here.
#[hot_path]
pub(super) fn run<R>(
    site: &Site,
    frame: &Frame,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> std::thread::Result<Result<R, Failure>> {
    catch_unwind(AssertUnwindSafe(|| {
        let guard = ForeignUnwind(site);
        let result = body(frame);
        core::mem::forget(guard);
        result
    }))
}

/// Ends a call on `node`: counts an `Err` or a panic while the context
/// is still this thread's, runs `leave` (which may release it) and turns
/// the outcome into the call's result.
#[hot_path]
pub(super) fn conclude<R>(
    site: &Site,
    node: &ContextNode,
    outcome: std::thread::Result<Result<R, Failure>>,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    leave: impl FnOnce(),
) -> R {
    match outcome {
        Ok(Ok(value)) => {
            leave();
            value
        }
        Ok(Err(failure)) => {
            node.value.errors.bump();
            leave();
            failed(site, failure, on_error)
        }
        Err(payload) => {
            node.value.panics.bump();
            leave();
            panicked(site, payload, on_panic)
        }
    }
}

/// Dropped only when something unwinds out of a callback's body. A Rust
/// panic is caught right after; a forced unwind (`pthread_exit`,
/// cancellation) or a foreign (C++) exception cannot be caught, so the
/// process aborts naming the callback. Where the compiler left no landing
/// pad, such an unwind passes through and `stack` recovers the abandoned
/// call later.
struct ForeignUnwind<'a>(&'a Site);

impl Drop for ForeignUnwind<'_> {
    // Inline: out of line, the fast path would keep the guard in memory.
    #[hot_path]
    fn drop(&mut self) {
        foreign_unwind(self.0);
    }
}

#[cold]
#[inline(never)]
fn foreign_unwind(site: &Site) {
    if !std::thread::panicking() {
        diag::abort_with(&format!(
            "callgate: a forced unwind (pthread_exit, pthread_cancel) or a foreign exception is \
             unwinding through callback `{}`; aborting",
            site.name
        ));
    }
}

/// A failed call (an `Err`, a bad argument, a shut gate): records the
/// message as the last error and returns `on_error`'s value, or aborts.
#[cold]
#[inline(never)]
pub(super) fn failed<R>(site: &Site, failure: Failure, on_error: impl FnOnce() -> R) -> R {
    let message = failure.into_message();
    if site.on_error == OnFailure::Abort {
        diag::abort_with(&format!(
            "callgate: callback `{}` failed: {message}; aborting",
            callback_name(site.name)
        ));
    }
    last_error::set_last_error(message);
    on_error()
}

/// A call whose body panicked: records the message as the last error and
/// returns `on_panic`'s value, or aborts.
#[cold]
#[inline(never)]
fn panicked<R>(site: &Site, payload: Box<dyn Any + Send>, on_panic: impl FnOnce() -> R) -> R {
    let message = payload_message(payload);
    if site.on_panic == OnFailure::Abort || settings::current().panic == PanicMode::Abort {
        diag::abort_with(&format!(
            "callgate: callback `{}` panicked: {message}; aborting",
            callback_name(site.name)
        ));
    }
    last_error::set_last_error(format!(
        "callback `{}` panicked: {message}",
        callback_name(site.name)
    ));
    on_panic()
}

/// Installs the panic hook of `panic=quiet` once the settings ask for it
/// (a thread's first call, and `callgate::env` reloading the settings, ask
/// here): it keeps the message of a panic inside a callback off standard
/// error. It reads the settings at each panic, so a later `panic=catch`
/// prints again.
#[cold]
pub(crate) fn quiet_panics_if_asked() {
    if settings::current().panic != PanicMode::Quiet {
        return;
    }
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    // A panicking thread cannot replace the hook (`set_hook` would panic):
    // the settings read during an unwind leave it to a later read.
    if std::thread::panicking() {
        return;
    }
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let caught_quietly = settings::current().panic == PanicMode::Quiet && thread::in_call();
            if !caught_quietly {
                previous(info);
            }
        }));
    });
}
