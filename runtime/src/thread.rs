//! Threads and their contexts: what the calling thread's slot holds, and
//! how a context comes to serve a thread and leaves it again.
//!
//! A thread's first call stores a context in the thread's [`tls`] slot and
//! arms its exit hook ([`hooks`]), which releases the context. The slot has
//! no destructor, so it works throughout thread teardown; a thread that
//! calls back after its release is served per call. Functions that act on
//! a context as its owner are `unsafe`: callers vouch it is theirs.
//!
//! Here: the slot's values and the per-call cache; `attach`, `release`,
//! and `orphans` (contexts a `fork` left without a thread).

use core::ptr;

use crate::context::ContextNode;
use crate::hooks;
use crate::tls::{self, Slot};

mod attach;
#[cfg(unix)]
mod orphans;
mod release;

pub(crate) use attach::{attach, bind_unbound};
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) use orphans::free_pool;
#[cfg(unix)]
pub(crate) use orphans::reclaim_orphans;
use release::release;
pub(crate) use release::{leave, release_at_exit};

/// The slot's value once the exit hook released the thread's context (or
/// there is none): later calls are served per call.
const EXITED: *const ContextNode = ptr::without_provenance(1);

/// A per-call context stays in the slot when its outermost call returns,
/// tagged as *cached* (counted as released) for the thread's next per-call
/// attach. The tag is the top bit, which no x86-64 user-space address has,
/// so [`serves`] stays one signed compare; elsewhere (aarch64 has top-byte
/// tags) nothing is cached.
const CACHES: bool =
    hooks::HAS_THREAD_EXIT_HOOK && cfg!(all(target_arch = "x86_64", target_pointer_width = "64"));

const CACHED_TAG: usize = 1 << (usize::BITS - 1);

/// The calling thread's identity among the threads alive: its
/// `pthread_self`, never 0 (0 means *no thread*).
#[cfg(unix)]
pub(crate) fn id() -> usize {
    // SAFETY: `pthread_self` has no preconditions.
    let id = unsafe { libc::pthread_self() } as usize;
    id.max(1)
}

/// The calling thread's identity: a thread-local's address.
#[cfg(not(unix))]
pub(crate) fn id() -> usize {
    thread_local! {
        static ID: u8 = const { 0 };
    }
    ID.with(|id| core::ptr::from_ref(id).addr())
}

/// The context serving this thread, if any. A per-call context found idle
/// is kept as a bound one ([`keep_for_interrupted_call`]).
#[hot_path]
pub(crate) fn current() -> Option<&'static ContextNode> {
    let node = serving()?;
    // SAFETY: `node` serves this thread, its owner.
    if unsafe { node.value.per_call() && node.value.is_idle() } {
        // SAFETY: as above.
        unsafe { keep_for_interrupted_call(node) };
    }
    Some(node)
}

/// Whether a callback runs on this thread (for `CALLGATE=panic=quiet`).
pub(crate) fn in_call() -> bool {
    // SAFETY: `node` serves this thread, its owner.
    serving().is_some_and(|node| unsafe { node.value.depth() } > 0)
}

#[hot_path]
fn serving() -> Option<&'static ContextNode> {
    let node = tls::get();
    if !serves(node) {
        return None;
    }
    // SAFETY: slot values other than null, `EXITED` and cached ones are
    // nodes of `CONTEXTS` (the contract of `tls::set`), freed only at unload.
    Some(unsafe { &*node })
}

/// For [`current`]: `node`, a per-call context in the slot with no call
/// on it, belongs to a call that the caller (a signal handler's)
/// interrupted between attach and entry or return and release. Only that
/// call may release it: it becomes a bound one until [`attach()`] again.
///
/// # Safety
///
/// `node` serves the calling thread, its owner, and no call runs on it.
#[cold]
#[inline(never)]
unsafe fn keep_for_interrupted_call(node: &'static ContextNode) {
    // SAFETY: forwarded caller obligation.
    unsafe { node.value.keep_bound() };
}

/// The slot's value, raw: `serves`'s compare is the only check.
#[hot_path]
pub(crate) fn slot() -> *const ContextNode {
    tls::get()
}

/// True when the slot's `value` is a context serving the thread (a node
/// of `CONTEXTS`, per `tls::set`).
#[hot_path]
pub(crate) fn serves(value: *const ContextNode) -> bool {
    if CACHES {
        // Null, `EXITED` and cached values (negative) are all at most `EXITED`.
        value.addr() as isize > EXITED.addr() as isize
    } else {
        value.addr() > EXITED.addr()
    }
}

/// True when the thread has a context its exit hook must hand back.
#[cfg(windows)]
pub(crate) fn holds_context() -> bool {
    let seen = tls::get();
    serves(seen) || cached(seen).is_some()
}

#[inline]
fn cached(value: *const ContextNode) -> Option<&'static ContextNode> {
    if !CACHES || value.addr() & CACHED_TAG == 0 {
        return None;
    }
    // SAFETY: a tagged value is a node of `CONTEXTS` cached for this thread.
    Some(unsafe { &*value.map_addr(|address| address & !CACHED_TAG) })
}

fn tagged(node: &'static ContextNode) -> *const ContextNode {
    ptr::from_ref(node).map_addr(|address| address | CACHED_TAG)
}

/// The per-call fast path's attach: takes the context the slot caches by
/// clearing the tag in one instruction; `None` when it caches none. Its
/// fields and exit hook are already set for this thread.
#[hot_path]
pub(crate) fn take_cached(slot: &Slot, value: *const ContextNode) -> Option<&'static ContextNode> {
    cached(value)?;
    // SAFETY: a tagged slot value caches a node of `CONTEXTS` for this
    // thread; untagged it serves the thread, a value `set` accepts.
    let node = unsafe { slot.untag(value) }?;
    // SAFETY: the slot now holds this node of `CONTEXTS`.
    let node = unsafe { &*node };
    node.value.binds.bump();
    Some(node)
}

/// The per-call fast path's release: caches `node` again with one store
/// when it has no `#[local]` values, else releases it as [`leave`] does.
///
/// # Safety
///
/// As for `release`.
#[hot_path]
pub(crate) unsafe fn release_cached(slot: &Slot, node: &'static ContextNode) {
    // SAFETY: this thread owns `node` (caller obligation).
    let plain = unsafe { !node.value.after_exit() && !node.value.locals.has_values() };
    if CACHES && plain {
        // Counted while this call owns `node`: once cached, a signal handler's
        // callback may take it and count.
        node.value.releases.bump();
        // A plain store: a signal handler's callback here leaves the slot as it
        // found it.
        // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for this
        // thread, which gives it up until it takes it back.
        unsafe { slot.set(tagged(node)) };
        return;
    }
    // SAFETY: forwarded caller obligations.
    unsafe { release(node) };
}

#[cfg(all(test, not(callgate_loom)))]
mod tests;
