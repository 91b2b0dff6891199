//! Attaching: a thread's first call (or each outermost call, per call)
//! takes a context from the thread's cache, the free list or a new
//! allocation, and claims the slot for it.

use core::ptr;

use super::release::release_values;
use super::{EXITED, cached, serves, serving};
use crate::context::{CONTEXTS, Context, ContextNode};
use crate::settings::{self, AttachMode};
use crate::{hint, hooks, tls};

/// Attaches the calling thread to a context: the slow path of a thread's
/// first call (or of every call in per-call mode).
///
/// A per-call attach takes the context the thread caches, if any.
///
/// Re-entrant: if a signal handler's call binds the thread meanwhile, the
/// slot's compare-and-swap makes exactly one context bound; the loser's
/// goes back to the free list.
#[inline]
pub(crate) fn attach(attach: AttachMode) -> &'static ContextNode {
    let seen = tls::get();
    if attach == AttachMode::PerCall {
        if let Some(node) = claim_cached(seen) {
            // A nested call may have kept it as a bound one while its last
            // attachment was being released (`keep_for_interrupted_call`).
            // SAFETY: this thread owns `node`, just taken from its cache,
            // and no callback runs on it; a cached context never serves a
            // thread whose exit hook ran.
            unsafe { node.value.set_per_call(true, false, false) };
            return node;
        }
    }
    attach_slow(attach, seen)
}

/// [`attach`]'s take from the cache, which reaches the slot anew: the
/// context that the slot's `value` caches, by claiming the slot for it;
/// `None` when `value` caches none, or the slot no longer holds `value`.
#[hot_path]
pub(super) fn claim_cached(value: *const ContextNode) -> Option<&'static ContextNode> {
    let node = cached(value)?;
    // SAFETY: `node` is a node of `CONTEXTS`, and claiming it from the
    // cache makes it serve this thread.
    unsafe { tls::claim(value, node) }.ok()?;
    node.value.binds.bump();
    Some(node)
}

/// `attach` from a context of the free list (or a new one), or from the
/// cache when the thread becomes bound; `seen` is what the slot held.
#[inline]
fn attach_slow(attach: AttachMode, mut seen: *const ContextNode) -> &'static ContextNode {
    if serves(seen) {
        // A signal handler's call bound the thread since the caller looked:
        // use its context (claiming over it would leak it).
        hint::rarely_taken();
        // SAFETY: a slot value that `serves` accepts is a node of
        // `CONTEXTS` serving this thread, freed only when the library is
        // unloaded.
        return unsafe { &*seen };
    }
    let mut reused = None;
    if let Some(node) = cached(seen) {
        // A thread that made per-call calls before its first bound one.
        hint::rarely_taken();
        // Out of the slot first, so a call from a signal handler cannot
        // take it from the cache meanwhile.
        // SAFETY: null is a slot value.
        if unsafe { tls::claim(seen, ptr::null()) }.is_err() {
            return attach_again(attach);
        }
        seen = ptr::null();
        reused = Some(node);
    }
    // A thread no exit hook reaches (it ran, or there was no key left) is
    // served per call and caches nothing: nothing would hand it back.
    let after_exit = ptr::eq(seen, EXITED) || !hooks::exit_hook_ready();
    let per_call = attach == AttachMode::PerCall || per_call_only(after_exit);
    let node = match reused {
        Some(node) => node,
        None => CONTEXTS.pop().unwrap_or_else(new_context),
    };
    // SAFETY: this thread owns `node`, which the cache, `pop` or `alloc`
    // just handed out, and no callback runs on it yet; `seen` is what the
    // slot held, and `node` came from the cache only if the slot held it
    // (it was taken out just above).
    if unsafe { bind(node, seen, per_call, after_exit, reused.is_none()) } {
        return node;
    }
    // A nested call bound the thread meanwhile: use its context.
    if let Some(bound) = serving() {
        return bound;
    }
    // The nested call's per-call context was released again.
    debug_assert!({
        let value = tls::get();
        ptr::eq(value, EXITED) || value.is_null() || cached(value).is_some()
    });
    attach_again(attach)
}

/// The attach of a thread's first call from a bound callback: binds the
/// thread for good, as [`attach`] does, and returns the context. `None`
/// where the call would be served per call: the caller takes the slow path.
///
/// # Safety
///
/// The calling thread's slot held null when this thread last read it, and
/// this thread has not called into the runtime since.
#[inline]
pub(crate) unsafe fn bind_unbound() -> Option<&'static ContextNode> {
    if per_call_only(!hooks::exit_hook_ready()) {
        return None;
    }
    let node = CONTEXTS.pop().unwrap_or_else(new_context);
    // SAFETY: this thread owns `node`, which `pop` or `alloc` just handed
    // out, and no callback runs on it yet; the slot held null when this
    // thread last read it, with no call into the runtime since (caller
    // obligation), and `node` did not come from the cache.
    if unsafe { bind(node, ptr::null(), false, false, true) } {
        return Some(node);
    }
    serving()
}

/// True when an attach serves the calling thread per call whatever its
/// callback asks: the platform has no exit hook, no exit hook reaches the
/// thread (`after_exit`), or the settings ask for it.
#[hot_path]
fn per_call_only(after_exit: bool) -> bool {
    !hooks::HAS_THREAD_EXIT_HOOK || after_exit || settings::current().attach == AttachMode::PerCall
}

/// Makes `node` serve the calling thread, whose slot held `seen`: records
/// how it serves the thread (`per_call`, `after_exit`; `new_thread` when
/// it did not come from this thread's cache), arms the exit hook and
/// claims the slot. False when a nested call (a signal handler) claimed
/// the slot first: `node` is back on the free list then.
///
/// # Safety
///
/// This thread owns `node`, which no callback runs on yet; `seen` is a
/// value the slot held since this thread last called into the runtime,
/// and `new_thread` is false only if `node` came from the slot's cache.
#[hot_path]
unsafe fn bind(
    node: &'static ContextNode,
    seen: *const ContextNode,
    per_call: bool,
    after_exit: bool,
    new_thread: bool,
) -> bool {
    // SAFETY: this thread owns `node`, and no callback runs on it yet
    // (caller obligations).
    unsafe {
        debug_assert_eq!(node.value.depth(), 0);
        node.value.set_per_call(per_call, after_exit, new_thread);
    }
    // Armed before the slot is claimed, which lets a nested call use the
    // context: the destructor must find it if the thread ends inside.
    // Per-call contexts too, for a thread that ends inside its call.
    if per_call {
        if hooks::HAS_THREAD_EXIT_HOOK {
            hooks::arm_exit_hook();
        }
    } else {
        hooks::register_exit_hook(node);
    }
    // SAFETY: `node` is a node of `CONTEXTS` that serves this thread.
    if unsafe { tls::claim(seen, node) }.is_err() {
        hint::rarely_taken();
        if new_thread {
            // SAFETY: this thread owns `node`, which never served a call,
            // and gives it up.
            unsafe { CONTEXTS.push(node) };
        } else {
            // From this thread's cache, where a `#[local]` value may be
            // bound on it (see `release_at_exit`): released first.
            // SAFETY: this thread owns `node`, released when it was cached
            // (counted, no call runs on it, no `LocalRef` is alive, it
            // serves no thread whose exit hook ran), out of the slot; the
            // thread gives it up.
            unsafe { release_values(node, false, false) };
        }
        return false;
    }
    node.value.binds.bump();
    true
}

/// A new context, for an attach that found the free list empty.
#[cold]
#[inline(never)]
fn new_context() -> &'static ContextNode {
    let node = CONTEXTS.alloc(Context::new());
    // SAFETY: `alloc` just made `node`, so this thread owns it and no
    // callback runs on it.
    unsafe { node.value.reserve_nested() };
    node
}

/// `attach` lost its claim to a nested per-call attachment that has been
/// released since: start over (rare, so a plain recursion).
#[cold]
fn attach_again(mode: AttachMode) -> &'static ContextNode {
    attach_slow(mode, tls::get())
}
