//! What a thread's running calls hold by a reference nothing else records:
//! see [`HeldRefs`].

use super::{AtomicUsize, Ordering};

/// How many counted references a context records at once (a node has no
/// room for more: see `context`).
const SLOTS: usize = 2;

/// The references to closures that a thread's running calls hold where
/// nothing else tells (a `Closure::concurrent` call that counted one, a
/// `Closure::new` call waiting for its turn), kept in the thread's context
/// so that a `fork` child, which lacks the thread, can give them up.
///
/// A record is made after its reference was taken and erased before it is
/// given up, so a child gives up at most what the call held. Beyond
/// [`SLOTS`] at once, references go unrecorded and a child leaks them.
///
/// # Atomic orderings
///
/// Only the owning thread (and its signal handlers' calls) writes the
/// words; a `fork` child reads them as the fork left them. A record is a
/// Release store (or compare-and-swap), so the taking of its reference
/// stays before it; its erasure is followed by the count's Release
/// decrement (or the Acquire compare-and-swap that took the turn waited
/// for), which keeps the erasure before that.
pub(crate) struct HeldRefs {
    /// Counted references: a closure's address, or 0.
    counted: [AtomicUsize; SLOTS],
    /// The closure a `Closure::new` call of the thread waits for the turn
    /// of, or 0.
    waiting: AtomicUsize,
    /// That turn's address, valid while `waiting` is not 0.
    turn: AtomicUsize,
}

/// What [`HeldRefs::note_wait`] replaced: a wait that the call noting it
/// interrupted (a signal handler's call), put back by
/// [`HeldRefs::end_wait`].
pub(crate) struct OuterWait {
    object: usize,
    turn: usize,
}

impl HeldRefs {
    pub(crate) fn new() -> HeldRefs {
        HeldRefs {
            counted: Default::default(),
            waiting: AtomicUsize::new(0),
            turn: AtomicUsize::new(0),
        }
    }

    /// Records that a running call of the owner took a reference to the
    /// closure at `object` (an exposed address, not 0). Returns the slot
    /// to [`erase`](HeldRefs::erase), or `None` when every slot is taken.
    pub(crate) fn record(&self, object: usize) -> Option<usize> {
        debug_assert_ne!(object, 0);
        // Release: see "Atomic orderings". A compare-and-swap, so that a
        // signal handler's call on this thread takes another slot.
        self.counted.iter().position(|slot| {
            slot.compare_exchange(0, object, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Erases the record in `slot`, which
    /// [`record`](HeldRefs::record) made for a call of the owner that
    /// gives its reference up next.
    pub(crate) fn erase(&self, slot: usize) {
        // Relaxed: see "Atomic orderings".
        self.counted[slot].store(0, Ordering::Relaxed);
    }

    /// Records that a `Closure::new` call of the owner, which holds a
    /// reference to the closure at `object` (an exposed address, not 0),
    /// is about to wait for the turn at `turn` (an exposed address).
    /// Returns what it replaces, for [`end_wait`](HeldRefs::end_wait).
    pub(crate) fn note_wait(&self, object: usize, turn: usize) -> OuterWait {
        debug_assert_ne!(object, 0);
        // Relaxed loads: the owner's own stores.
        let outer = OuterWait {
            object: self.waiting.swap(0, Ordering::Relaxed),
            turn: self.turn.load(Ordering::Relaxed),
        };
        // Relaxed: `waiting`, stored after it, publishes it.
        self.turn.store(turn, Ordering::Relaxed);
        // Release: see "Atomic orderings"; the turn's address before it.
        self.waiting.store(object, Ordering::Release);
        outer
    }

    /// The call that noted a wait took the turn (its taking shows in the
    /// turn's state) or gave up: puts back `outer`.
    pub(crate) fn end_wait(&self, outer: OuterWait) {
        // Relaxed: see "Atomic orderings"; `waiting` is cleared before the
        // turn's address changes.
        self.waiting.store(0, Ordering::Relaxed);
        self.turn.store(outer.turn, Ordering::Relaxed);
        // Release: as in `note_wait`.
        self.waiting.store(outer.object, Ordering::Release);
    }

    /// Forgets every record: what calls that were abandoned recorded, as
    /// the context passes to another thread (the references leak).
    pub(crate) fn forget(&self) {
        // Relaxed: the owner's own words.
        for slot in &self.counted {
            slot.store(0, Ordering::Relaxed);
        }
        self.waiting.store(0, Ordering::Relaxed);
    }

    /// Takes every record out, for a `fork` child to give the references
    /// up: `each(object, turn)`, with the turn a waiting call waited for
    /// (which it may have taken just before the fork), or 0.
    ///
    /// # Safety
    ///
    /// The caller is the only thread of a `fork` child, and the thread
    /// these records belong to is not in it: its calls will never give
    /// the references up.
    #[cfg(unix)]
    pub(crate) unsafe fn take_left(&self, mut each: impl FnMut(usize, usize)) {
        // Relaxed: the child has one thread, which reads the memory the
        // fork left.
        for slot in &self.counted {
            let object = slot.swap(0, Ordering::Relaxed);
            if object != 0 {
                each(object, 0);
            }
        }
        let object = self.waiting.swap(0, Ordering::Relaxed);
        if object != 0 {
            each(object, self.turn.load(Ordering::Relaxed));
        }
    }
}
