//! Releasing: a context goes back to the thread's cache or the free list
//! when its outermost per-call call returns, and when its thread exits.

use core::ptr;

use super::{CACHES, EXITED, cached, id, serves, tagged};
use crate::context::{CONTEXTS, ContextNode};
use crate::tls;

/// A call returned on `node`'s thread; releases it if it was the outermost
/// call of a per-call attachment.
///
/// # Safety
///
/// - `node` serves the calling thread: `current` or `attach` returned it on
///   this thread, and it was not released since.
/// - The call that is returning entered `node` with `Context::enter`,
///   which returned `start`, and has not left it yet.
/// - The caller does not use `node` afterwards: it may have been released.
#[hot_path]
pub(crate) unsafe fn leave(node: &'static ContextNode, start: u32) {
    // SAFETY: `node` serves this thread, and this pairs with the `enter` of
    // the returning call (caller obligations).
    if unsafe { node.value.leave(start) } {
        // SAFETY:
        // - `node` serves this thread, and the caller gives it up;
        // - the outermost call just left it, so no call runs on it and no
        //   `LocalRef` into its locals is alive.
        unsafe { release(node) };
    }
}

/// The runtime's key destructor runs on an exiting thread: releases the
/// context serving it, if any, hands a cached one back, and serves any
/// later call on the thread per call.
///
/// None of the thread's frames remain, so calls still recorded as running
/// were abandoned: they are forgotten and their `#[local]` values
/// released. Returns what the hazard word announced (0 for nothing), an
/// abandoned call's, whose hold the caller ends (`closure::end_hold`).
///
/// # Safety
///
/// Runs on the exiting thread, from its key destructor.
#[must_use]
pub(crate) unsafe fn release_at_exit() -> usize {
    // First: a callback that a `Local::release` below makes is served per
    // call, and nothing is cached from now on.
    let seen = mark_exited();
    if let Some(node) = cached(seen) {
        // A signal handler's callback may have bound a `#[local]` value on
        // it while it was being cached.
        // SAFETY: the cache owned `node` for this thread, released already
        // (counted, no call runs on it, no `LocalRef` is alive, it serves
        // no thread whose exit hook ran); the slot no longer holds it, so
        // this thread gives it up.
        unsafe { release_values(node, false, false) };
    } else if serves(seen) {
        // SAFETY: the slot held it, so it is a node of `CONTEXTS` serving
        // this thread (the contract of `tls::set`).
        let node = unsafe { &*seen };
        // SAFETY:
        // - `node` serves this thread;
        // - the thread is in its key destructor: its callbacks all
        //   returned or were abandoned, no `LocalRef` can be used again.
        let withdrawn = unsafe { node.value.forget_all_calls() };
        // SAFETY:
        // - `node` serves this thread, which is exiting and never uses it
        //   again as its owner (a later call attaches per call);
        // - its depth is now 0 and no `LocalRef` is alive.
        unsafe { release(node) };
        return withdrawn;
    }
    0
}

/// Stores `EXITED` in the slot and returns what it replaced, in one claim,
/// so a signal handler's bind in between cannot be lost.
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
/// thread and caches the context in the slot or pushes it onto the free
/// list.
///
/// # Safety
///
/// - `node` serves the calling thread, which gives it up: nothing uses it
///   as its owner afterwards (but for the next attach, if it is cached).
/// - No call runs on it (its depth is 0), so no `LocalRef` into its locals
///   is alive.
///
/// `extern "C"`, so it cannot unwind, for the reason given in
/// `boundary::slow`.
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions, reason = "called from Rust only")]
pub(super) unsafe extern "C" fn release(node: &'static ContextNode) {
    // SAFETY: this thread owns `node`, whose outermost call returned (or
    // the thread is exiting: then no value is held any more).
    if unsafe {
        node.value.forgotten_may_resume()
            || node.value.locals.has_values() && node.value.held_past_the_outermost_call()
    } && ptr::eq(tls::get(), node)
    {
        // A callback suspended on another stack may resume: the context
        // stays with the thread, as a bound one, until the thread exits.
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
        // No `Local::release` to run: cache it with one compare-and-swap,
        // which fails only if the exit hook detached it.
        // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for
        // this thread, which gives up the context until it takes it back.
        if unsafe { tls::claim(node, tagged(node)) }.is_ok() {
            return;
        }
    }
    let attached = ptr::eq(tls::get(), node);
    // SAFETY: forwarded caller obligations.
    unsafe { release_values(node, attached, after_exit) };
}

/// `release` of a context that has `#[local]` values, or cannot be cached.
/// The thread is detached first, so a callback a `Local::release` makes
/// attaches a context of its own.
///
/// # Safety
///
/// As for `release`, which counted the release; `attached` says whether
/// the slot holds `node`, and `after_exit` is `node`'s.
#[cold]
#[inline(never)]
pub(super) unsafe fn release_values(node: &'static ContextNode, attached: bool, after_exit: bool) {
    if attached {
        // SAFETY: null and `EXITED` are slot values.
        unsafe { tls::set(if after_exit { EXITED } else { ptr::null() }) };
    }
    // Out of the slot but still this thread's: a `fork` from a
    // `Local::release` must leave it to the child (`reclaim_orphans`).
    // SAFETY: for all three, this thread owns the context and no
    // `LocalRef` is alive (caller obligations).
    unsafe {
        node.value.set_releasing(id());
        node.value.locals.release_all();
        node.value.set_releasing(0);
    }
    // Cached only if nothing attached meanwhile, in one claim, as in
    // `mark_exited`.
    // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for this
    // thread, which gives up the context until it takes it back.
    if CACHES && attached && !after_exit && unsafe { tls::claim(ptr::null(), tagged(node)) }.is_ok()
    {
        return;
    }
    // SAFETY: this thread owns `node`, which `attach` took from `CONTEXTS`
    // or its cache (it was not pushed since: only a release pushes it, and
    // a cached context is pushed only once it left the slot), and gives it
    // up; no call runs on it (caller obligations).
    unsafe { hand_back(node) };
}

/// Pushes `node`, which served this thread, back onto the free list, its
/// calls recorded as over for the next owner (`Context::give_up`).
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
