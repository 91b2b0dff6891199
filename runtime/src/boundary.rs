//! The boundary itself: what every generated trampoline runs.
//!
//! [`call`] passes the gate, attaches the thread, runs the body under
//! `catch_unwind` and turns an `Err` or a panic into the declared fallback
//! plus a last-error message. It is `#[inline(always)]` and generic, so the
//! trampoline compiles to the fast path inline; everything that only runs
//! when something goes wrong is `#[cold]` and out of line.

use core::any::Any;
use core::fmt::Display;
use core::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::context::ContextNode;
use crate::diag;
use crate::failure::{Failure, payload_message};
use crate::gate::{Closed, GatePolicy};
use crate::local::{Local, LocalKey, LocalRef};
use crate::settings::{self, AttachMode, PanicMode};
use crate::stack::Anchor;
use crate::{init, last_error, stats, thread};

/// What to do with a failure (`on_panic = abort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Record the message and return the declared fallback value.
    Return,
    /// Print the message, naming the callback, and abort the process.
    Abort,
}

/// The static description of one callback, built by `#[c_callback]`.
#[derive(Debug)]
pub struct Site {
    /// The Rust name of the callback, used in messages.
    pub name: &'static str,
    /// How the thread is attached.
    pub attach: AttachMode,
    /// What to do while initialisation is pending.
    pub gate: GatePolicy,
    /// What to do when the body panics.
    pub on_panic: Policy,
    /// What to do on `Err`, a bad argument or a failed init.
    pub on_error: Policy,
}

/// The calling thread's context, handed to the body of a callback.
pub struct Frame {
    node: &'static ContextNode,
    /// The depth this call runs at.
    depth: u32,
    /// Tied to the thread: a frame never leaves the call it was made for.
    _not_send: PhantomData<*const ()>,
}

impl Frame {
    /// This thread's `T` for a `#[local]` parameter, found through `key`
    /// (the callback's own), or an error if an outer call on this thread is
    /// already using it.
    #[inline(always)]
    pub fn local<T: Local>(&self, key: &LocalKey<T>) -> Result<LocalRef<'_, T>, Failure> {
        // SAFETY: frames exist only inside `call` on the thread the context
        // serves (`Frame` is neither `Send` nor `Sync`).
        unsafe { self.node.value.locals.get(key, self.depth) }
    }
}

/// Wraps a plain return value for [`call`]'s body.
#[inline(always)]
pub fn ok<T>(value: T) -> Result<T, Failure> {
    Ok(value)
}

/// Turns the callback's `Result` into [`call`]'s body result; the error's
/// `Display` text becomes the last error.
#[inline(always)]
pub fn from_result<T, E: Display>(result: Result<T, E>) -> Result<T, Failure> {
    result.map_err(|error| Failure::from_display(&error))
}

/// Runs one callback at the boundary.
///
/// `on_error` is returned (unless the site's policy aborts) when the gate is
/// shut, an argument is bad or the body returns `Err`; `on_panic` when the
/// body panics. The failure's message becomes the thread's last error.
/// `site` lives as long as the call: a trampoline's is a `static`, a
/// closure's is in the closure's allocation.
#[inline(always)]
pub fn call<R>(
    site: &Site,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    if site.gate != GatePolicy::Skip && !init::GATE.is_ready() {
        if let Err(failure) = pass_gate(site) {
            stats::record_error_outside_call();
            return failed(site, failure, on_error);
        }
    }
    let node = match thread::current() {
        Some(node) => node,
        None => thread::attach(site.attach),
    };
    let anchor = Anchor::new();
    // SAFETY:
    // - `node` serves this thread: `current` or `attach` just returned it
    //   here, and only this thread's own `leave` below can release it;
    // - `anchor` is in this call's frame and lives until the end of it.
    let start = unsafe { node.value.enter(&anchor) };
    let frame = Frame {
        node,
        depth: start + 1,
        _not_send: PhantomData,
    };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let guard = ForeignUnwind(site);
        let result = body(&frame);
        core::mem::forget(guard);
        result
    }));
    // Every arm ends the call with `thread::leave`, whose obligations hold
    // on all three paths:
    // - `node` still serves this thread: a nested call releases the context
    //   only as the outermost one;
    // - `enter` above started this call at `start`, and it has not left;
    // - `node` is not used after `leave`, which may release it.
    match outcome {
        Ok(Ok(value)) => {
            // SAFETY: the obligations listed above the `match`.
            unsafe { thread::leave(node, start) };
            value
        }
        Ok(Err(failure)) => {
            node.value.errors.bump();
            // SAFETY: the obligations listed above the `match`.
            unsafe { thread::leave(node, start) };
            failed(site, failure, on_error)
        }
        Err(payload) => {
            node.value.panics.bump();
            // SAFETY: the obligations listed above the `match`.
            unsafe { thread::leave(node, start) };
            panicked(site, payload, on_panic)
        }
    }
}

/// Dropped only when something unwinds out of a callback's body: a Rust
/// panic (caught right after, so nothing to do), or an unwind that is not
/// a Rust panic — a forced unwind (`pthread_exit`, a cancellation acted
/// on) or a foreign (C++) exception thrown by C code the body called.
/// Where such an unwind reaches a landing pad here, it cannot be caught
/// (a forced unwind must not stop; Rust cannot catch foreign exceptions),
/// so the process aborts with a message naming the callback. Where the
/// compiler dropped the landing pads (the body's C calls are `extern "C"`,
/// which cannot unwind, so an optimised build often has none), the unwind
/// passes through without running anything, and the runtime recovers the
/// abandoned call later (see `stack`).
struct ForeignUnwind<'a>(&'a Site);

impl Drop for ForeignUnwind<'_> {
    #[cold]
    fn drop(&mut self) {
        if !std::thread::panicking() {
            diag::abort_with(&format!(
                "callgate: a forced unwind (pthread_exit, pthread_cancel) or a foreign exception \
                 is unwinding through callback `{}`; aborting",
                self.0.name
            ));
        }
    }
}

#[cold]
#[inline(never)]
fn pass_gate(site: &Site) -> Result<(), Failure> {
    init::pass_gate_slow(site.gate).map_err(|closed| match closed {
        Closed::Failed(message) => Failure::new(format!("initialisation failed: {message}")),
        Closed::Pending => Failure::new(format!(
            "`{}` was called before initialisation finished (gate = fail)",
            site.name
        )),
    })
}

#[cold]
#[inline(never)]
fn failed<R>(site: &Site, failure: Failure, on_error: impl FnOnce() -> R) -> R {
    let message = failure.into_message();
    if site.on_error == Policy::Abort {
        diag::abort_with(&format!(
            "callgate: callback `{}` failed: {message}; aborting",
            site.name
        ));
    }
    last_error::set_last_error(message);
    on_error()
}

#[cold]
#[inline(never)]
fn panicked<R>(site: &Site, payload: Box<dyn Any + Send>, on_panic: impl FnOnce() -> R) -> R {
    let message = payload_message(payload);
    if site.on_panic == Policy::Abort || settings::current().panic == PanicMode::Abort {
        diag::abort_with(&format!(
            "callgate: callback `{}` panicked: {message}; aborting",
            site.name
        ));
    }
    last_error::set_last_error(format!("callback `{}` panicked: {message}", site.name));
    on_panic()
}
