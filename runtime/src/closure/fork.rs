//! What a `fork` child gives up for the calls of the threads it lacks: the
//! references their contexts recorded while the calls ran
//! ([`RecordedReference`], [`WaitNote`]).

use core::ptr::NonNull;

use super::allocation::Header;
#[cfg(unix)]
use super::allocation::release;
use crate::context::ContextNode;
use crate::sync::{OuterWait, Turn};
use crate::thread;

/// A running call's counted reference, recorded in its context
/// (`sync::HeldRefs`) until dropped.
pub(super) struct RecordedReference(Option<(&'static ContextNode, usize)>);

impl RecordedReference {
    /// Records the reference this thread's call holds to the closure of
    /// `header` (taken before, given up after the drop).
    pub(super) fn new(header: NonNull<Header>) -> RecordedReference {
        // Exposed: a `fork` child turns it back into a pointer.
        let object = header.as_ptr().expose_provenance();
        RecordedReference(
            thread::current().and_then(|node| Some((node, node.value.held.record(object)?))),
        )
    }
}

impl Drop for RecordedReference {
    fn drop(&mut self) {
        if let Some((node, slot)) = self.0 {
            node.value.held.erase(slot);
        }
    }
}

/// A `Closure::new` call's note that it waits for the turn while holding
/// a reference, for a `fork` child to give up; erased when dropped.
pub(super) struct WaitNote(Option<(&'static ContextNode, OuterWait)>);

impl WaitNote {
    /// Notes that this thread's call waits for `turn`.
    ///
    /// # Safety
    ///
    /// The call holds a reference to the closure of `header` until the note
    /// is dropped (or, if it takes the turn, until it ends it).
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn new(header: NonNull<Header>, turn: &Turn) -> WaitNote {
        // Exposed: a `fork` child turns them back into pointers.
        let object = header.as_ptr().expose_provenance();
        let turn = core::ptr::from_ref(turn).expose_provenance();
        WaitNote(thread::current().map(|node| (node, node.value.held.note_wait(object, turn))))
    }
}

impl Drop for WaitNote {
    fn drop(&mut self) {
        if let Some((node, outer)) = self.0.take() {
            node.value.held.end_wait(outer);
        }
    }
}

/// In a `fork` child: gives up a missing thread's call's reference.
/// `object` is the closure's exposed address, `turn` the turn it waited
/// for (or 0), `mark` its thread's. A call that had taken the turn is left
/// to the child's first call, which takes the turn over.
///
/// # Safety
///
/// Runs on the only thread of a `fork` child, once per record of a thread
/// it lacks (`HeldRefs::take_left`).
#[cfg(unix)]
#[cold]
pub(crate) unsafe fn give_up_left_behind(object: usize, turn: usize, mark: usize) {
    let Some(header) = NonNull::new(core::ptr::with_exposed_provenance_mut::<Header>(object))
    else {
        return;
    };
    if turn != 0 {
        // SAFETY: the turn of a closure the call held a reference to.
        let turn = unsafe { &*core::ptr::with_exposed_provenance::<Turn>(turn) };
        if turn.is_held_under(mark) {
            return;
        }
    }
    // SAFETY: the call held this reference (recorded after taking it,
    // erased before giving it up) and will never give it up.
    unsafe { release(header) };
}
