//! Threads and their contexts: what the calling thread's slot holds, and
//! how a context comes to serve a thread and leaves it again.
//!
//! A thread's first call pops a context (or allocates one) and stores it in
//! the thread's [`tls`] slot, and arms the thread's exit hook ([`hooks`]),
//! which releases the context when the thread exits. The slot has no
//! destructor, so it works at any point of thread teardown: a thread that
//! calls back after its release is served per call, so nothing leaks. A
//! per-call context stays [cached](CACHES) in the slot between calls.
//!
//! Here: the slot's values and the per-call cache. `attach`: binding a
//! thread. `release`: after a per-call call, and at thread exit.
//! `orphans`: contexts a `fork` left without a thread, and the pool at
//! unload.
//!
//! A context belongs to the thread it serves: the functions that act on it
//! as its owner are `unsafe`, and their callers vouch that the context is
//! the calling thread's.

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

/// The slot's value once the exit hook released the thread's context, or
/// a call returned on a thread without an exit hook: later calls are served
/// per call. (The slot holds null, this, a context serving the thread, or a
/// [cached](CACHES) one.)
const EXITED: *const ContextNode = ptr::without_provenance(1);

/// A per-call context stays in the slot when its outermost call returns,
/// tagged as *cached*, for the thread's next per-call attach; it counts as
/// released, and the exit hook hands it back. A thread whose hook ran
/// never caches.
///
/// The tag is the top bit, which no user-space address has on x86-64, so
/// [`serves`] stays one signed compare. Elsewhere (aarch64 has top-byte
/// pointer tags) nothing is cached.
const CACHES: bool =
    hooks::HAS_THREAD_EXIT_HOOK && cfg!(all(target_arch = "x86_64", target_pointer_width = "64"));

/// The tag of a cached context in the slot.
const CACHED_TAG: usize = 1 << (usize::BITS - 1);

/// The calling thread's identity among the threads alive: its
/// `pthread_self`, which is its descriptor's address on glibc and musl and
/// never 0 (a 0 maps to 1 anyway, so that 0 can mean *no thread*).
#[cfg(unix)]
pub(crate) fn id() -> usize {
    // SAFETY: `pthread_self` has no preconditions.
    let id = unsafe { libc::pthread_self() } as usize;
    id.max(1)
}

/// The calling thread's identity among the threads alive: the address of
/// a thread-local, never 0.
#[cfg(not(unix))]
pub(crate) fn id() -> usize {
    thread_local! {
        static ID: u8 = const { 0 };
    }
    ID.with(|id| core::ptr::from_ref(id).addr())
}

/// The context serving this thread, if any, for a call to run on (the
/// fast paths read the slot themselves).
///
/// A per-call context found with no call running on it is kept as a
/// bound one first ([`keep_for_interrupted_call`]): the call that attached
/// it was interrupted, and it alone may release it.
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

/// Whether a callback is running on this thread: the panic hook of
/// `CALLGATE=panic=quiet` asks, from inside the panicking call.
pub(crate) fn in_call() -> bool {
    // SAFETY: `node` serves this thread, its owner.
    serving().is_some_and(|node| unsafe { node.value.depth() } > 0)
}

/// The context serving this thread, if any, as the slot holds it.
#[hot_path]
fn serving() -> Option<&'static ContextNode> {
    let node = tls::get();
    if !serves(node) {
        return None;
    }
    // SAFETY: values of the slot other than null, `EXITED` and cached ones
    // are nodes of `CONTEXTS` (the contract of `tls::set`), which are freed
    // only when the library is unloaded, when no thread runs its code.
    Some(unsafe { &*node })
}

/// For [`current`]: `node`, a per-call context in the slot with no call
/// on it, belongs to a call the caller (a signal handler's) interrupted
/// between attach and entry or between return and release. Only that call
/// may release it, so it becomes a bound one, whose calls release nothing
/// (`Context::leave`); [`attach()`] makes it per call again.
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

/// The slot's value, for [`serves`]: raw, so that `serves`'s one compare
/// is the only check.
#[hot_path]
pub(crate) fn slot() -> *const ContextNode {
    tls::get()
}

/// True when the slot's `value` is a context serving the thread: then it
/// is a node of `CONTEXTS` that only this thread uses, and freed only when
/// the library is unloaded (the contract of `tls::set`).
#[hot_path]
pub(crate) fn serves(value: *const ContextNode) -> bool {
    if CACHES {
        // One signed compare: null, `EXITED` and the cached values (their
        // top bit set: negative) are all at most `EXITED`.
        value.addr() as isize > EXITED.addr() as isize
    } else {
        value.addr() > EXITED.addr()
    }
}

/// True when a context serves the calling thread or is cached for it:
/// something its exit hook must hand back.
#[cfg(windows)]
pub(crate) fn holds_context() -> bool {
    let seen = tls::get();
    serves(seen) || cached(seen).is_some()
}

/// The context cached in the slot's `value`, if it holds one.
#[inline]
fn cached(value: *const ContextNode) -> Option<&'static ContextNode> {
    if !CACHES || value.addr() & CACHED_TAG == 0 {
        return None;
    }
    // SAFETY: a tagged value is a node of `CONTEXTS` that `release` cached
    // for this thread; nodes are freed only when the library is unloaded.
    Some(unsafe { &*value.map_addr(|address| address & !CACHED_TAG) })
}

/// The slot's value that caches `node`.
fn tagged(node: &'static ContextNode) -> *const ContextNode {
    ptr::from_ref(node).map_addr(|address| address | CACHED_TAG)
}

/// The per-call fast path's attach: takes the context the slot caches
/// (`value` was read from it) by clearing the tag in one instruction, so a
/// signal handler sees the slot before or after; `None` when it caches
/// none. Its last attachment was per call on this thread: its fields say
/// so already, and its exit hook is armed.
#[hot_path]
pub(crate) fn take_cached(slot: &Slot, value: *const ContextNode) -> Option<&'static ContextNode> {
    cached(value)?;
    // SAFETY: a tagged slot value caches a node of `CONTEXTS` for this
    // thread, and untagged it is that node serving this thread, a value
    // `set` accepts: taking it from the cache makes it serve the thread.
    // The top bit is the tag (`CACHED_TAG`).
    let node = unsafe { slot.untag(value) }?;
    // SAFETY: the slot now holds this node of `CONTEXTS`, freed only when
    // the library is unloaded.
    let node = unsafe { &*node };
    node.value.binds.bump();
    Some(node)
}

/// The per-call fast path's release, through `slot`, where
/// [`take_cached`] took `node`: caches `node` again with one store when
/// it has no `#[local]` values, else releases it as [`leave`] does.
///
/// # Safety
///
/// As for `release`: `node` serves the calling thread, which gives it up,
/// and no call runs on it.
#[hot_path]
pub(crate) unsafe fn release_cached(slot: &Slot, node: &'static ContextNode) {
    // SAFETY: this thread owns `node` (caller obligation).
    let plain = unsafe { !node.value.after_exit() && !node.value.locals.has_values() };
    if CACHES && plain {
        // Counted while this call still owns `node`: once cached, a signal
        // handler's callback may take it and count on it.
        node.value.releases.bump();
        // A plain store: a signal handler's callback here leaves the slot
        // as it found it (`keep_for_interrupted_call`).
        // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for
        // this thread, which gives up the context until it takes it back.
        unsafe { slot.set(tagged(node)) };
        return;
    }
    // SAFETY: forwarded caller obligations.
    unsafe { release(node) };
}

#[cfg(all(test, not(callgate_loom)))]
mod tests;
