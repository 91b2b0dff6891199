//! Closure references a thread's running calls hold that nothing else
//! records, and the turn one may hold outside its call: see [`HeldRefs`].

use super::{AtomicUsize, Ordering};

/// Counted references a context records at once (a node has no room for
/// more).
const SLOTS: usize = 2;

/// The closure references a thread's running calls hold where nothing else
/// tells (a `Closure::concurrent` call's counted one, a `Closure::new`
/// call's while it waits for its turn), kept in the thread's context for a
/// `fork` child, which lacks the thread, to give up. Recorded after taking
/// and erased before giving up, so a child gives up at most what was held;
/// beyond [`SLOTS`] at once, a child leaks them. Also whether a turn may be
/// held outside a call ([`note_turn`](HeldRefs::note_turn)): a child then
/// never gives the context's mark to another thread.
///
/// # Atomic orderings
///
/// Only the owning thread (and its signal handlers' calls) writes the
/// words; a `fork` child reads them as the fork left them. A record is a
/// Release store (or compare-and-swap), so the reference's taking stays
/// before it; its erasure is followed by the count's Release decrement,
/// keeping it before.
pub(crate) struct HeldRefs {
    /// Closure addresses, or 0.
    counted: [AtomicUsize; SLOTS],
    /// The closure a `Closure::new` call waits for the turn of, or 0.
    waiting: AtomicUsize,
    /// How many of the owner's `Closure::new` calls may hold a turn outside
    /// their frames (taken just before the call starts, ended just after it
    /// returns).
    turn: AtomicUsize,
}

/// A wait that a signal handler's call (noting its own) interrupted, put
/// back by [`HeldRefs::end_wait`].
pub(crate) struct OuterWait(usize);

impl HeldRefs {
    pub(crate) fn new() -> HeldRefs {
        HeldRefs {
            counted: Default::default(),
            waiting: AtomicUsize::new(0),
            turn: AtomicUsize::new(0),
        }
    }

    /// Notes that the owner is about to take a turn outside a call (the
    /// compare-and-swap that takes it is a Release: a `fork` child that sees
    /// the turn held sees the note), until [`end_turn`](HeldRefs::end_turn).
    #[hot_path]
    pub(crate) fn note_turn(&self) {
        // Relaxed: the owner's own word. A load and a store, not a locked
        // add: only the owner writes it, and a call of its signal handler in
        // between adds and takes away as much.
        let notes = self.turn.load(Ordering::Relaxed);
        self.turn.store(notes + 1, Ordering::Relaxed);
    }

    /// The noted turn ended, or was not taken.
    #[hot_path]
    pub(crate) fn end_turn(&self) {
        // Relaxed: as in `note_turn`; after the turn's end, an AcqRel swap.
        let notes = self.turn.load(Ordering::Relaxed);
        self.turn.store(notes - 1, Ordering::Relaxed);
    }

    /// True while a noted turn may be held: the context's mark must not be
    /// another thread's (for a `fork` child).
    #[cfg(unix)]
    pub(crate) fn turn_noted(&self) -> bool {
        // Relaxed: read by the owner, or by a `fork` child as the fork left it.
        self.turn.load(Ordering::Relaxed) != 0
    }

    /// Records a reference the owner's running call took to the closure at
    /// `object` (exposed, not 0); the slot, or `None` when all are taken.
    pub(crate) fn record(&self, object: usize) -> Option<usize> {
        debug_assert_ne!(object, 0);
        // Release: see "Atomic orderings". A compare-and-swap, so a signal
        // handler's call takes another slot.
        self.counted.iter().position(|slot| {
            slot.compare_exchange(0, object, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        })
    }

    /// Erases the record in `slot`, before its reference is given up.
    pub(crate) fn erase(&self, slot: usize) {
        // Relaxed: see "Atomic orderings".
        self.counted[slot].store(0, Ordering::Relaxed);
    }

    /// Records that the owner's `Closure::new` call, holding a reference to
    /// the closure at `object` (exposed, not 0), is about to wait for its
    /// turn; returns what it replaces, for [`end_wait`](HeldRefs::end_wait).
    pub(crate) fn note_wait(&self, object: usize) -> OuterWait {
        debug_assert_ne!(object, 0);
        // Release: see "Atomic orderings". The swap's load reads the owner's
        // own store.
        OuterWait(self.waiting.swap(object, Ordering::Release))
    }

    /// The noting call took the turn or gave up, and is about to give up its
    /// reference: puts back `outer`.
    pub(crate) fn end_wait(&self, outer: OuterWait) {
        // Release: as in `note_wait` (the outer call still holds its reference).
        self.waiting.store(outer.0, Ordering::Release);
    }

    /// Forgets what abandoned calls recorded, as the context changes hands
    /// (their references leak).
    pub(crate) fn forget(&self) {
        // Relaxed: the owner's own words.
        for slot in &self.counted {
            slot.store(0, Ordering::Relaxed);
        }
        self.waiting.store(0, Ordering::Relaxed);
        self.turn.store(0, Ordering::Relaxed);
    }

    /// Takes every record out for a `fork` child to give up: `each(object)`.
    ///
    /// # Safety
    ///
    /// The caller is the only thread of a `fork` child, which lacks the
    /// records' thread.
    #[cfg(unix)]
    pub(crate) unsafe fn take_left(&self, mut each: impl FnMut(usize)) {
        // Relaxed: the child's one thread reads what the fork left.
        for slot in self.counted.iter().chain([&self.waiting]) {
            let object = slot.swap(0, Ordering::Relaxed);
            if object != 0 {
                each(object);
            }
        }
    }
}
