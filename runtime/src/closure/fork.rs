//! What a `fork` child gives up for the calls of the threads it lacks,
//! which never return there: the counted references their contexts
//! recorded while the calls ran ([`RecordedReference`], [`WaitNote`]),
//! given up by `give_up_left_behind`. The announcements of such calls are
//! ended by `end_hold`.

use core::ptr::NonNull;

use super::allocation::Header;
#[cfg(unix)]
use super::allocation::release;
use crate::context::ContextNode;
use crate::sync::{OuterWait, Turn};
use crate::thread;

/// A counted reference of a running call, recorded in the context serving
/// the thread (see `sync::HeldRefs`) until this is dropped.
pub(super) struct RecordedReference(Option<(&'static ContextNode, usize)>);

impl RecordedReference {
    /// Records the reference this thread's running call holds to the
    /// closure of `header` (taken before, given up after the drop).
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

/// A `Closure::new` call's note, in its context, that it waits for the
/// closure's turn while holding a reference to it: a `fork` child that
/// lacks the waiting thread gives that reference up
/// (`give_up_left_behind`). Erased when dropped, once the call has the
/// turn (or gave up).
pub(super) struct WaitNote(Option<(&'static ContextNode, OuterWait)>);

impl WaitNote {
    /// Notes that this thread's call waits for `turn`, the turn of the
    /// closure of `header`.
    ///
    /// # Safety
    ///
    /// The call holds a reference to the closure of `header` until the
    /// note is dropped (or, if it takes the turn, until it ends it).
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn new(header: NonNull<Header>, turn: &Turn) -> WaitNote {
        // The addresses are exposed: a `fork` child turns them back into
        // pointers.
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

/// In a `fork` child: gives up a reference that a call of a thread the
/// child lacks held (`sync::HeldRefs`). `object` is the closure's exposed
/// address; `turn` the turn it waited for, or 0; `mark` its thread's mark.
/// A call that had taken the turn is left to the child's first call of the
/// closure, which takes the turn over (see `Exclusive::with`).
///
/// # Safety
///
/// Runs on the only thread of a `fork` child; `object`, `turn` and
/// `mark` come from the context of a thread the child does not have
/// (`HeldRefs::take_left`), once.
#[cfg(unix)]
#[cold]
pub(crate) unsafe fn give_up_left_behind(object: usize, turn: usize, mark: usize) {
    let Some(header) = NonNull::new(core::ptr::with_exposed_provenance_mut::<Header>(object))
    else {
        return;
    };
    if turn != 0 {
        // SAFETY: the turn of a closure the left call held a reference
        // to, alive with it.
        let turn = unsafe { &*core::ptr::with_exposed_provenance::<Turn>(turn) };
        if turn.is_held_under(mark) {
            return;
        }
    }
    // SAFETY: the left call held this reference (recorded after it took
    // it, erased before giving it up) and will never give it up.
    unsafe { release(header) };
}
