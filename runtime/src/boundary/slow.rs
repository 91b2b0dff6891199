//! Every call the straight line does not serve, out of line: a thread's
//! first call, the slot in dynamic TLS, and the slow path proper (the
//! gate, an attach, a nested or abandoned call).
//!
//! The functions a trampoline calls here are `extern "C"` (never called
//! from C), so they cannot unwind: the trampoline needs no landing pad,
//! and a forced unwind or foreign exception passes its frame.

use core::marker::PhantomData;

use super::outcome::{self, conclude, failed, run};
use super::site::{Frame, Site};
use super::straight::{align_function, bound_on, per_call_on};
use crate::context::ContextNode;
use crate::failure::Failure;
use crate::gate::{Closed, GatePolicy};
use crate::local::{Local, LocalKey, LocalRef};
use crate::settings::AttachMode;
use crate::stack::Anchor;
use crate::tls::Slot;
use crate::{init, stats, thread};

/// Every call the fast paths do not serve: [`call_unbound`] in dynamic
/// TLS or for a bound callback's null slot, else [`call_slow`]. Called from
/// one place, so the trampoline sets up a frame on this path only; it only
/// chooses, so its frame stays small in a debug build.
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions, reason = "called from Rust only")]
pub(super) extern "C" fn call_cold<R>(
    site: &Site,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    let slot = match Slot::dynamic(site.gate == GatePolicy::Skip) {
        Some(slot) => Some(slot),
        // The slot holds null on a bound site: a thread's first call.
        None if site.attach == AttachMode::Bound && slot_read_null(site) => None,
        None => return call_slow(site, anchor, on_error, on_panic, body),
    };
    call_unbound(site, anchor, slot, on_error, on_panic, body)
}

/// True when the slot, reached without a call, holds null (false where it
/// is not read so: fast path closed, or dynamic TLS).
#[hot_path]
fn slot_read_null(site: &Site) -> bool {
    Slot::without_call(|| site.passes_gate()).is_some_and(|slot| slot.get().is_null())
}

/// A call whose fast-path read found no context: `slot` is the slot
/// reached through the descriptor in dynamic TLS, else `None` (the bound
/// read found null). Runs a fast path on what the slot holds or
/// [`bind_first`] binds; else the slow path. Its own function, so that in
/// a dev build `call_cold`'s frame does not carry this path's.
#[hot_path]
#[allow(improper_ctypes_definitions, reason = "called from Rust only")]
extern "C" fn call_unbound<R>(
    site: &Site,
    anchor: &Anchor,
    slot: Option<Slot>,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    let mut value = slot.as_ref().map_or(core::ptr::null(), Slot::get);
    if site.attach == AttachMode::Bound && value.is_null() {
        // SAFETY: the slot held null when read just now.
        value = unsafe { bind_first(site) };
    }
    if thread::serves(value) {
        // SAFETY: a value `thread::serves` accepts; `anchor` is in the
        // trampoline's frame.
        return unsafe { bound_on(site, &*value, anchor, on_error, on_panic, body) };
    }
    // Not a `let` chain: those need Rust 1.88 (`rust-version` is 1.85).
    if site.attach == AttachMode::PerCall {
        if let Some(slot) = &slot {
            if let Some(node) = thread::take_cached(slot, value) {
                let release = || {
                    // SAFETY: as in `straight::call`.
                    unsafe { thread::release_cached(slot, node) }
                };
                // SAFETY: as in `straight::call`.
                return unsafe {
                    per_call_on(site, node, anchor, release, on_error, on_panic, body)
                };
            }
        }
    }
    call_slow(site, anchor, on_error, on_panic, body)
}

/// The context bound to the calling thread now, whose slot read null, for
/// a bound `site`'s call; null where the slow path has more to do (a shut
/// gate). A signal handler's call may have bound the thread since: then
/// its context. Not generic (one copy serves every callback) and aligned
/// to 1 KiB (one page for a new thread's first call).
///
/// # Safety
///
/// The calling thread's slot held null when it last read it, with no call
/// into the runtime since.
#[cold]
#[inline(never)]
unsafe extern "C" fn bind_first(site: &Site) -> *const ContextNode {
    align_function::<10>();
    if !site.passes_gate() {
        return core::ptr::null();
    }
    init::open_fast_path();
    outcome::quiet_panics_if_asked();
    // SAFETY: the slot held null (caller obligation).
    unsafe { thread::bind_unbound() }.map_or(core::ptr::null(), core::ptr::from_ref)
}

/// Every call that is not a fast path's: the gate shut or unchecked, the
/// thread not bound (or per call with nothing cached), or a call recorded
/// as running (nested or abandoned).
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions, reason = "called from Rust only")]
pub(super) extern "C" fn call_slow<R>(
    site: &Site,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    outcome::quiet_panics_if_asked();
    let node = match thread::current() {
        // Bound and past the gate: nested or abandoned, a `#[local]` value not
        // ready, or the fast path not open yet.
        Some(node) if site.passes_gate() => {
            init::open_fast_path();
            node
        }
        _ => match arrive(site) {
            Ok(node) => node,
            Err(failure) => return failed(site, *failure, on_error),
        },
    };
    // SAFETY: `node` serves this thread (just returned, and only this
    // thread's `leave` below releases it); `anchor` is in the calling
    // trampoline's frame, alive until this returns.
    let start = unsafe { node.value.enter(anchor) };
    let frame = Frame {
        node,
        depth: start + 1,
        anchor,
        _not_send: PhantomData,
    };
    let outcome = run(site, &frame, body);
    conclude(site, node, outcome, on_error, on_panic, || {
        // SAFETY: `node` still serves this thread (only the outermost call
        // releases it); `enter` started this call at `start` and it has not
        // left; `conclude` does not use `node` after this.
        unsafe { thread::leave(node, start) }
    })
}

/// The slow start of a call: passes the gate, opens the fast path, and
/// attaches the thread if needed. The failure is boxed to keep the result
/// small.
#[cold]
#[inline(never)]
fn arrive(site: &Site) -> Result<&'static ContextNode, Box<Failure>> {
    if !site.passes_gate() {
        if let Err(failure) = pass_gate(site) {
            stats::record_error_outside_call();
            return Err(Box::new(failure));
        }
    }
    init::open_fast_path();
    Ok(match thread::current() {
        Some(node) => node,
        None => thread::attach(site.attach),
    })
}

/// Waits at the gate, or says why the call cannot pass it.
#[cold]
#[inline(never)]
fn pass_gate(site: &Site) -> Result<(), Failure> {
    init::pass_gate_slow(site.name, site.gate).map_err(|closed| match closed {
        Closed::Failed(message) => Failure::new(format!("initialisation failed: {message}")),
        Closed::Pending => Failure::new(format!(
            "`{}` was called before initialisation finished (gate = fail)",
            site.name
        )),
    })
}

/// Every `#[local]` call the fast path does not serve, called from one
/// place as [`call_cold`] is.
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions, reason = "called from Rust only")]
pub(super) extern "C" fn call_local_cold<R, T: Local>(
    site: &Site,
    key: &'static LocalKey<T>,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame, LocalRef<'_, T>) -> Result<R, Failure>,
) -> R {
    call_slow_local(site, key, anchor, on_error, on_panic, body)
}

/// [`call_slow`] for a callback with one `#[local]` parameter.
#[hot_path]
fn call_slow_local<R, T: Local>(
    site: &Site,
    key: &'static LocalKey<T>,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame, LocalRef<'_, T>) -> Result<R, Failure>,
) -> R {
    call_slow(site, anchor, on_error, on_panic, move |frame| {
        let local = frame.local(key)?;
        body(frame, local)
    })
}

/// The context bound to the calling thread, binding it first as
/// [`bind_first`] does, for a call about to start (a closure's, taking its
/// hold before `call`). `None` where the thread is attached per call, its
/// exit hook ran, or the gate is shut.
#[hot_path]
pub(crate) fn bound_context(site: &Site) -> Option<&'static ContextNode> {
    let mut value = thread::slot();
    if value.is_null() && site.attach == AttachMode::Bound {
        crate::hint::rarely_taken();
        // SAFETY: the slot held null when read just now.
        value = unsafe { bind_first(site) };
    }
    bound_node(value)
}

/// The context the slot's `value` names when it is bound to the thread:
/// `None` for null, a per-call context (running or cached) and the exit
/// hook's mark.
#[hot_path]
pub(crate) fn bound_node(value: *const ContextNode) -> Option<&'static ContextNode> {
    if !thread::serves(value) {
        return None;
    }
    // SAFETY: a value `thread::serves` accepts.
    let node: &'static ContextNode = unsafe { &*value };
    // SAFETY: `node` serves this thread.
    (!unsafe { node.value.per_call() }).then_some(node)
}
