//! Contexts whose threads are gone: those a `fork` child's parent threads
//! held, and the whole pool when the library is unloaded.

use super::{cached, id, serving};
use crate::context::CONTEXTS;
use crate::tls;

/// What the calls of the threads a `fork` left behind held, for the child
/// to give up ([`reclaim_orphans`]).
pub(crate) struct LeftBehind {
    /// Their hazard words' announcements (`closure::end_hold`).
    pub(crate) announced: Vec<usize>,
    /// Their recorded references' closures (`sync::HeldRefs`,
    /// `closure::give_up_left_behind`).
    pub(crate) held: Vec<usize>,
}

/// In a `fork` child: returns every context that is neither free nor
/// this thread's to the free list, abandoning its `#[local]` values, and
/// returns what their threads' calls held.
///
/// A context whose thread was inside a call stays off the free list for
/// good: the child's calls take over its `Closure::new` turns
/// (`sync::orphan_marks`) only because no thread gets its mark again.
///
/// # Safety
///
/// The caller is the only thread of a `fork` child (its child handler).
#[cold]
#[must_use]
pub(crate) unsafe fn reclaim_orphans() -> LeftBehind {
    // This thread's own: the one it caches, and one it was releasing the
    // values of when it forked.
    let own = serving()
        .or_else(|| cached(tls::get()))
        .map(|node| node.index());
    let me = id();
    let mut free = vec![false; CONTEXTS.allocated()];
    for index in CONTEXTS.free_indices() {
        if let Some(slot) = free.get_mut(index as usize) {
            *slot = true;
        }
    }
    let mut left = LeftBehind {
        announced: Vec::new(),
        held: Vec::new(),
    };
    let mut left_in_calls = Vec::new();
    for node in CONTEXTS.iter() {
        let index = node.index();
        // SAFETY: this is the only thread of the child (caller obligation).
        let releasing = unsafe { node.value.releasing() };
        // One an earlier fork kept out of use stays so: an orphaned mark.
        let mark = core::ptr::from_ref(node).addr();
        if Some(index) == own
            || releasing == me
            || free.get(index as usize).copied().unwrap_or(false)
            || crate::sync::is_orphaned(mark)
        {
            continue;
        }
        // SAFETY: the child's only thread (caller obligation); `node` serves
        // no thread of it.
        let in_a_call = unsafe { node.value.may_be_in_a_call() };
        // SAFETY: as above.
        let withdrawn = unsafe { node.value.reset_orphan() };
        if withdrawn != 0 {
            left.announced.push(withdrawn);
        }
        // SAFETY: as above: the recording thread is gone.
        unsafe {
            node.value.held.take_left(|object| left.held.push(object));
        }
        if in_a_call {
            left_in_calls.push(mark);
            continue;
        }
        // SAFETY: neither free nor serving a thread: the only thread owns it.
        unsafe { CONTEXTS.push(node) };
    }
    // SAFETY: the child's only thread; these contexts stay off the free
    // list for good, so no thread uses their marks again.
    unsafe { crate::sync::orphan_marks(&left_in_calls) };
    left
}

/// Frees every context of the pool: the library is being unloaded.
///
/// # Safety
///
/// No thread is bound or runs the library's code, and none will until it
/// is unloaded.
#[cold]
// Only the ELF unload hook (Linux, Android) frees the pool.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) unsafe fn free_pool() {
    // SAFETY: forwarded caller obligation.
    unsafe { CONTEXTS.free_all() };
}
