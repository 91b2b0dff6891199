//! Attaching: a context from the thread's cache, the free list or a new
//! allocation, and the slot claimed for it.

use core::ptr;

use super::release::release_values;
use super::{EXITED, cached, serves, serving};
use crate::context::{CONTEXTS, Context, ContextNode};
use crate::settings::{self, AttachMode};
use crate::{hint, hooks, tls};

/// Attaches the calling thread to a context: the slow path of a thread's
/// first call (or of every per-call call), from the thread's cache first.
/// Re-entrant: if a signal handler's call binds the thread meanwhile, the
/// slot's compare-and-swap keeps exactly one context bound.
#[inline]
pub(crate) fn attach(attach: AttachMode) -> &'static ContextNode {
    let seen = tls::get();
    if attach == AttachMode::PerCall {
        if let Some(node) = claim_cached(seen) {
            // It may have been kept bound by `keep_for_interrupted_call`.
            // SAFETY: this thread owns `node`, just taken from its cache, and no
            // callback runs on it; a cached context's exit hook has not run.
            unsafe { node.value.set_per_call(true, false, false) };
            return node;
        }
    }
    attach_slow(attach, seen)
}

/// [`attach`]'s take from the cache: claims the slot for the context
/// `value` caches; `None` when it caches none or the slot changed.
#[hot_path]
pub(super) fn claim_cached(value: *const ContextNode) -> Option<&'static ContextNode> {
    let node = cached(value)?;
    // SAFETY: a node of `CONTEXTS`, which the claim makes serve this thread.
    unsafe { tls::claim(value, node) }.ok()?;
    node.value.binds.bump();
    Some(node)
}

/// `attach` from the free list (or a new context), or from the cache when
/// the thread becomes bound; `seen` is what the slot held.
#[inline]
fn attach_slow(attach: AttachMode, mut seen: *const ContextNode) -> &'static ContextNode {
    if serves(seen) {
        // A signal handler's call bound the thread since the caller looked:
        // use its context (claiming over it would leak it).
        hint::rarely_taken();
        // SAFETY: a slot value `serves` accepts is a node of `CONTEXTS` serving
        // this thread.
        return unsafe { &*seen };
    }
    let mut reused = None;
    if let Some(node) = cached(seen) {
        // Per-call calls before the first bound one.
        hint::rarely_taken();
        // Out of the slot first, so a signal handler's call cannot take it.
        // SAFETY: null is a slot value.
        if unsafe { tls::claim(seen, ptr::null()) }.is_err() {
            return attach_again(attach);
        }
        seen = ptr::null();
        reused = Some(node);
    }
    // Without an exit hook: per call, and no cache (nothing would hand it
    // back).
    let after_exit = ptr::eq(seen, EXITED) || !hooks::exit_hook_ready();
    let per_call = attach == AttachMode::PerCall || per_call_only(after_exit);
    let node = match reused {
        Some(node) => node,
        None => CONTEXTS.pop().unwrap_or_else(new_context),
    };
    // SAFETY: this thread owns `node`, just handed out, with no callback on
    // it; `seen` is what the slot held, and a cached `node` was taken out of
    // it just above.
    if unsafe { bind(node, seen, per_call, after_exit, reused.is_none()) } {
        return node;
    }
    // A signal handler's call bound the thread meanwhile: use its context.
    if let Some(bound) = serving() {
        return bound;
    }
    // That call's per-call context was released again.
    debug_assert!({
        let value = tls::get();
        ptr::eq(value, EXITED) || value.is_null() || cached(value).is_some()
    });
    attach_again(attach)
}

/// The attach of a thread's first call from a bound callback; `None`
/// where the call would be served per call (the caller takes the slow
/// path).
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
    // SAFETY: this thread owns `node`, just handed out, with no callback on
    // it; the slot held null (caller obligation); not from the cache.
    if unsafe { bind(node, ptr::null(), false, false, true) } {
        return Some(node);
    }
    serving()
}

/// True when an attach serves the thread per call whatever its callback
/// asks: no exit hook, or the settings.
#[hot_path]
fn per_call_only(after_exit: bool) -> bool {
    !hooks::HAS_THREAD_EXIT_HOOK || after_exit || settings::current().attach == AttachMode::PerCall
}

/// Makes `node` serve the calling thread, whose slot held `seen`: records
/// how, arms the exit hook and claims the slot. False when a signal
/// handler's call claimed the slot first (`node` is given back).
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
    // SAFETY: owner, no callback on it yet (caller obligations).
    unsafe {
        debug_assert_eq!(node.value.depth(), 0);
        node.value.set_per_call(per_call, after_exit, new_thread);
    }
    // Armed before the claim lets a nested call use the context, so the
    // destructor finds it if the thread ends inside (per-call ones too).
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
            // SAFETY: this thread owns `node`, which never served a call.
            unsafe { CONTEXTS.push(node) };
        } else {
            // From the cache, where a `#[local]` value may be bound: released.
            // SAFETY: this thread owns `node`, released when cached (counted, idle,
            // no `LocalRef`, exit hook not run), out of the slot; it gives it up.
            unsafe { release_values(node, false, false) };
        }
        return false;
    }
    node.value.binds.bump();
    true
}

#[cold]
#[inline(never)]
fn new_context() -> &'static ContextNode {
    let node = CONTEXTS.alloc(Context::new());
    // SAFETY: `alloc` just made `node`: this thread owns it, idle.
    unsafe { node.value.reserve_nested() };
    node
}

/// `attach` lost its claim to a nested per-call attachment released since:
/// start over.
#[cold]
fn attach_again(mode: AttachMode) -> &'static ContextNode {
    attach_slow(mode, tls::get())
}
