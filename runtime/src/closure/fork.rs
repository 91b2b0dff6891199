//! What a `fork` child gives up for the calls of the threads it lacks: the
//! references their contexts recorded while the calls ran
//! ([`RecordedReference`], [`WaitNote`]).

use core::ptr::NonNull;

use super::allocation::Header;
#[cfg(unix)]
use super::allocation::release;
use crate::context::ContextNode;
use crate::sync::OuterWait;
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
    /// Notes that this thread's call waits for the turn.
    ///
    /// # Safety
    ///
    /// The call holds a reference to the closure of `header` until after the
    /// note is dropped.
    pub(super) unsafe fn new(header: NonNull<Header>) -> WaitNote {
        // Exposed: a `fork` child turns it back into a pointer.
        let object = header.as_ptr().expose_provenance();
        WaitNote(thread::current().map(|node| (node, node.value.held.note_wait(object))))
    }
}

impl Drop for WaitNote {
    fn drop(&mut self) {
        if let Some((node, outer)) = self.0.take() {
            node.value.held.end_wait(outer);
        }
    }
}

/// In a `fork` child: gives up a missing thread's call's reference to the
/// closure whose exposed address is `object`.
///
/// # Safety
///
/// Runs on the only thread of a `fork` child, once per record of a thread
/// it lacks (`HeldRefs::take_left`).
#[cfg(unix)]
#[cold]
pub(crate) unsafe fn give_up_left_behind(object: usize) {
    let Some(header) = NonNull::new(core::ptr::with_exposed_provenance_mut::<Header>(object))
    else {
        return;
    };
    // SAFETY: the call held this reference (recorded after taking it,
    // erased before giving it up) and will never give it up.
    unsafe { release(header) };
}
