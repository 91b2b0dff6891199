//! Contexts whose threads are gone: those a `fork` child's parent threads
//! held, and the whole pool when the library is unloaded.

use super::{cached, id, serving};
use crate::context::CONTEXTS;
use crate::tls;

/// What the calls of the threads a `fork` left behind held, which will
/// never be given up in the child unless the child gives them up for them
/// ([`reclaim_orphans`]).
pub(crate) struct LeftBehind {
    /// What their contexts' hazard words announced (see
    /// `closure::end_hold`).
    pub(crate) announced: Vec<usize>,
    /// The references their contexts recorded (see `sync::HeldRefs`):
    /// `(closure, turn, mark)`, with the turn a call waited for (or 0) and
    /// the mark of its thread (see `closure::give_up_left_behind`).
    pub(crate) held: Vec<(usize, usize, usize)>,
}

/// In a `fork` child: returns every context that is neither free nor
/// this thread's to the free list, abandoning its `#[local]` values (no
/// `release`, no `Drop`). Returns what those threads' calls held, for the
/// caller to give up (`closure::end_hold`, `closure::give_up_left_behind`).
///
/// A context whose thread was inside a call stays off the free list for
/// good: that call may hold `Closure::new` turns under the context's
/// address, which the child's calls take over (`sync::orphan_marks`) only
/// because no thread gets that address as its mark again.
///
/// # Safety
///
/// The caller is the only thread of a `fork` child (the `fork` child
/// handler): the contexts that served the parent's other threads have no
/// owner left.
#[cold]
#[must_use]
pub(crate) unsafe fn reclaim_orphans() -> LeftBehind {
    // The context this thread caches is its own too, and so is one it was
    // releasing the values of when it forked (from a `Local::release`).
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
        // A context an earlier fork left out of use (below) stays so: its
        // address is still an orphaned mark.
        let mark = core::ptr::from_ref(node).addr();
        if Some(index) == own
            || releasing == me
            || free.get(index as usize).copied().unwrap_or(false)
            || crate::sync::is_orphaned(mark)
        {
            continue;
        }
        // SAFETY: this is the only thread of the child (caller obligation),
        // and `node` serves no thread of it.
        let in_a_call = unsafe { node.value.may_be_in_a_call() };
        // SAFETY: as above.
        let withdrawn = unsafe { node.value.reset_orphan() };
        if withdrawn != 0 {
            left.announced.push(withdrawn);
        }
        // SAFETY: as above: the thread whose calls recorded them is gone.
        unsafe {
            node.value
                .held
                .take_left(|object, turn| left.held.push((object, turn, mark)));
        }
        if in_a_call {
            left_in_calls.push(mark);
            continue;
        }
        // SAFETY: `node` is neither free nor serving a thread, so the only
        // thread owns it, and gives it up here.
        unsafe { CONTEXTS.push(node) };
    }
    // SAFETY: the only thread of the child; the contexts of these marks
    // are kept off the free list for good, so no thread uses their marks
    // (a context's address, `boundary::Frame::thread_mark`) again.
    unsafe { crate::sync::orphan_marks(&left_in_calls) };
    left
}

/// Frees every context of the pool: the library is being unloaded.
///
/// # Safety
///
/// No thread is bound or runs the library's code, and none will until it
/// is unloaded: every context is free, and nothing pops one again.
#[cold]
// Only the ELF unload hook (Linux, Android) frees the pool.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) unsafe fn free_pool() {
    // SAFETY: forwarded caller obligation.
    unsafe { CONTEXTS.free_all() };
}
