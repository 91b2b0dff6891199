//! Releasing: a context goes back to the thread's cache or the free list.

use core::ptr;

use super::{CACHES, EXITED, cached, id, serves, tagged};
use crate::context::{CONTEXTS, ContextNode};
use crate::tls;

/// A call returned; releases `node` if it was a per-call attachment's
/// outermost call.
///
/// # Safety
///
/// - `node` serves the calling thread, not released since.
/// - The returning call entered it with `Context::enter`, which returned
///   `start`, and has not left.
/// - The caller does not use `node` afterwards: it may be released.
#[hot_path]
pub(crate) unsafe fn leave(node: &'static ContextNode, start: u32) {
    // SAFETY: caller obligations.
    if unsafe { node.value.leave(start) } {
        // SAFETY: `node` serves this thread, which gives it up; the outermost
        // call just left, so no call or `LocalRef` is left on it.
        unsafe { release(node) };
    }
}

/// The key destructor's release: the context serving the exiting thread,
/// or its cached one; later calls are served per call. Calls still
/// recorded were abandoned: they are forgotten, their `#[local]` values
/// released. Returns what the hazard word announced, for the caller to end
/// (`closure::end_hold`).
///
/// # Safety
///
/// Runs on the exiting thread, from its key destructor.
#[must_use]
pub(crate) unsafe fn release_at_exit() -> usize {
    // First, so a callback from a `Local::release` below is served per call.
    let seen = mark_exited();
    if let Some(node) = cached(seen) {
        // A signal handler's callback may have bound a `#[local]` value on it.
        // SAFETY: the cache owned `node` for this thread, released already
        // (counted, idle, no `LocalRef`); out of the slot, it is given up.
        unsafe { release_values(node, false, false) };
    } else if serves(seen) {
        // SAFETY: a slot value `serves` accepts (the contract of `tls::set`).
        let node = unsafe { &*seen };
        // SAFETY: `node` serves this thread, in its key destructor: its calls
        // returned or were abandoned, and no `LocalRef` is used again.
        let withdrawn = unsafe { node.value.forget_all_calls() };
        // SAFETY: `node` serves this thread, which never owns it again; depth 0,
        // no `LocalRef`.
        unsafe { release(node) };
        return withdrawn;
    }
    0
}

/// Stores `EXITED` in the slot and returns what it replaced, in one claim
/// (a signal handler's bind in between is not lost).
#[cold]
fn mark_exited() -> *const ContextNode {
    let mut seen = tls::get();
    loop {
        // SAFETY: `EXITED` is one of the slot's values.
        match unsafe { tls::claim(seen, EXITED) } {
            Ok(()) => return seen,
            Err(found) => seen = found,
        }
    }
}

/// Hands `node` back: runs `Local::release` on its values, detaches the
/// thread and caches the context or pushes it onto the free list.
/// `extern "C"`, so it cannot unwind (see `boundary::slow`).
///
/// # Safety
///
/// - `node` serves the calling thread, which gives it up: nothing uses it
///   as its owner afterwards (but the next attach, if cached).
/// - No call runs on it (depth 0), so no `LocalRef` is alive.
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions, reason = "called from Rust only")]
pub(super) unsafe extern "C" fn release(node: &'static ContextNode) {
    // SAFETY: this thread owns `node`.
    if unsafe {
        node.value.forgotten_may_resume()
            || node.value.locals.has_values() && node.value.held_past_the_outermost_call()
    } && ptr::eq(tls::get(), node)
    {
        // A callback suspended on another stack may resume: keep the context
        // as a bound one until the thread exits.
        // SAFETY: this thread owns `node`.
        unsafe { node.value.keep_bound() };
        return;
    }
    // Counted while this call still owns `node`, as in `release_cached`.
    node.value.releases.bump();
    // SAFETY: this thread owns `node` (caller obligation).
    let after_exit = unsafe { node.value.after_exit() };
    // SAFETY: as above.
    if CACHES && !after_exit && !unsafe { node.value.locals.has_values() } {
        // No `Local::release` to run: cache it in one claim, which fails only
        // if the exit hook detached it.
        // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for this
        // thread, which gives it up until it takes it back.
        if unsafe { tls::claim(node, tagged(node)) }.is_ok() {
            return;
        }
    }
    let attached = ptr::eq(tls::get(), node);
    // SAFETY: forwarded caller obligations.
    unsafe { release_values(node, attached, after_exit) };
}

/// `release` of a context that has `#[local]` values, or cannot be cached.
/// The thread is detached first: a callback from `Local::release` gets a
/// context of its own.
///
/// # Safety
///
/// As for `release`, which counted it; `attached`: the slot holds `node`;
/// `after_exit` is `node`'s.
#[cold]
#[inline(never)]
pub(super) unsafe fn release_values(node: &'static ContextNode, attached: bool, after_exit: bool) {
    if attached {
        // SAFETY: null and `EXITED` are slot values.
        unsafe { tls::set(if after_exit { EXITED } else { ptr::null() }) };
    }
    // Out of the slot but this thread's: a `fork` from `Local::release`
    // leaves it to the child (`reclaim_orphans`).
    // SAFETY: this thread owns the context; no `LocalRef` (caller
    // obligations).
    unsafe {
        node.value.set_releasing(id());
        node.value.locals.release_all();
        node.value.set_releasing(0);
    }
    // Cached only if nothing attached meanwhile, in one claim.
    // SAFETY: as above.
    if CACHES && attached && !after_exit && unsafe { tls::claim(ptr::null(), tagged(node)) }.is_ok()
    {
        return;
    }
    // SAFETY: this thread owns `node`, which is not on the free list (only a
    // release pushes it, a cached one once out of the slot), and gives it up;
    // no call runs on it (caller obligations).
    unsafe { hand_back(node) };
}

/// Pushes `node` back onto the free list, its calls recorded as over for
/// the next owner (`Context::give_up`).
///
/// # Safety
///
/// This thread owns `node`, which is not on the free list, and gives it
/// up: no call runs on it, and nothing uses it as its owner afterwards.
unsafe fn hand_back(node: &'static ContextNode) {
    // SAFETY: forwarded caller obligations.
    unsafe {
        node.value.give_up();
        CONTEXTS.push(node);
    }
}
