//! Hazard words: a thread announces the object its running call uses, so
//! that whoever retires the object defers its destruction to the end of
//! that call. They keep a `Closure::concurrent` alive without a shared
//! counter: a call writes only its own thread's word.
//!
//! # Atomic orderings
//!
//! * [`announce`](Hazard::announce) is a Release store, read back by the
//!   owner with Relaxed loads (only it stores a non-zero value). The C
//!   caller's own synchronisation orders a running call's announcement
//!   before the retirement's read (a call that starts after is a use after
//!   free). Release, so an announcement overwriting a withdrawn one still
//!   carries the withdrawn call's uses to a retirement that reads it.
//! * [`withdraw`](Hazard::withdraw) is an AcqRel swap: Release, so the
//!   call's uses of the object happen before a retirement that reads the
//!   word after it (the retirement's compare-and-swap fails with an
//!   Acquire read of the cleared word, or of a later Release
//!   announcement); Acquire, so that a retirement that deferred to it
//!   happened before the holder's part of [`Retirement::release`].
//! * [`Retirement`]'s count is only read-modify-written, AcqRel: the
//!   decrement that reaches zero acquires every earlier holder's release,
//!   so every use of the object happens before its destruction.

use super::{AtomicUsize, Ordering};

/// The bit of a [`Hazard`] word: a retirement waits for this call.
const DEFERRED: usize = 1;

/// The bit of a [`Hazard`] word that sends the withdrawal down the
/// caller's slow path (to tell helgrind).
pub(crate) const MARKED: usize = 2;

/// The bits of a [`Hazard`] word that are not an object's address.
const FLAGS: usize = DEFERRED | MARKED;

/// Where a retirement's count starts: far above any number of holders, so
/// early releases cannot bring it to zero.
const BIAS: usize = usize::MAX / 2;

/// One thread's hazard word: the object its running call uses (0 for
/// none), *announced* before the call's first use and *withdrawn* after its
/// last. A retirement reads every word and leaves the destruction to the
/// last call it found announcing. One call at a time: a call that finds the
/// word taken keeps its object alive another way.
pub(crate) struct Hazard {
    /// The object's address with [`FLAGS`], or 0.
    word: AtomicUsize,
}

impl Hazard {
    pub(crate) fn new() -> Hazard {
        Hazard {
            word: AtomicUsize::new(0),
        }
    }

    /// Announces `object` with `flags` ([`MARKED`] or 0), unless the word is
    /// taken: false then.
    ///
    /// # Safety
    ///
    /// - The caller is the word's thread, and withdraws before announcing
    ///   through it again.
    /// - `object` is a non-zero multiple of 4, of an object not retired yet
    ///   that stays alive until a [`Retirement`] of it has read this word.
    #[hot_path]
    pub(crate) unsafe fn announce(&self, object: usize, flags: usize) -> bool {
        debug_assert!(object != 0 && object & FLAGS == 0 && flags & !MARKED == 0);
        // Relaxed: only this thread stores a non-zero value (retirements only
        // add a flag).
        if self.word.load(Ordering::Relaxed) != 0 {
            crate::hint::rarely_taken();
            return false;
        }
        // Release: see "Atomic orderings" in the module docs.
        self.word.store(object | flags, Ordering::Release);
        true
    }

    /// Ends the announcement: returns the word, with [`DEFERRED`] if a
    /// retirement waits for this call; then the caller ends its part with
    /// [`Retirement::release`].
    ///
    /// # Safety
    ///
    /// The caller is the word's thread, done with what it announced.
    #[hot_path]
    pub(crate) unsafe fn withdraw(&self) -> usize {
        // AcqRel: see "Atomic orderings" in the module docs.
        self.word.swap(0, Ordering::AcqRel)
    }

    /// True when `withdrawn` says a retirement waits for the call.
    #[hot_path]
    pub(crate) fn deferred(withdrawn: usize) -> bool {
        withdrawn & DEFERRED != 0
    }

    /// The object's address in `withdrawn` (0 for none).
    #[hot_path]
    pub(crate) fn object(withdrawn: usize) -> usize {
        withdrawn & !FLAGS
    }

    /// Flags the word deferred if it announces `object`; true if so.
    fn defer(&self, object: usize) -> bool {
        // Acquire: pairs with the Release `withdraw` (or a later announcement):
        // a word read clear has the call's uses before what follows.
        let mut seen = self.word.load(Ordering::Acquire);
        while seen & !FLAGS == object && seen & DEFERRED == 0 {
            // AcqRel: Release, so the holder's `withdraw` that reads the flag orders
            // this retirement before its `release`; Acquire as above.
            match self.word.compare_exchange_weak(
                seen,
                seen | DEFERRED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => seen = now,
            }
        }
        false
    }
}

/// How many announcing calls an object's destruction still waits for,
/// once retired. Lives in the object.
pub(crate) struct Retirement {
    holders: AtomicUsize,
}

impl Retirement {
    pub(crate) fn new() -> Retirement {
        Retirement {
            holders: AtomicUsize::new(0),
        }
    }

    /// Retires `object`: defers to each hazard word that announces it. True
    /// when none does (or all released meanwhile): the caller destroys the
    /// object now; else the last [`release`](Retirement::release) does.
    ///
    /// # Safety
    ///
    /// - `object` is the object this is in, a non-zero multiple of 4, retired
    ///   once.
    /// - `hazards` yields every word a call of it may have announced it in.
    pub(crate) unsafe fn retire<'a>(
        &self,
        object: usize,
        hazards: impl IntoIterator<Item = &'a Hazard>,
    ) -> bool {
        // Relaxed: published by the Release part of each successful `defer`,
        // before any holder can decrement.
        self.holders.store(BIAS, Ordering::Relaxed);
        let mut deferred = 0;
        for hazard in hazards {
            if hazard.defer(object) {
                deferred += 1;
            }
        }
        let remove = BIAS - deferred;
        // AcqRel: see "Atomic orderings" in the module docs.
        self.holders.fetch_sub(remove, Ordering::AcqRel) == remove
    }

    /// A deferred-to holder is done; true for the last: the caller destroys
    /// the object.
    ///
    /// # Safety
    ///
    /// The caller withdrew an announcement a retirement deferred to, and
    /// releases once for it.
    pub(crate) unsafe fn release(&self) -> bool {
        // AcqRel: see "Atomic orderings" in the module docs.
        self.holders.fetch_sub(1, Ordering::AcqRel) == 1
    }
}

#[cfg(all(test, not(callgate_loom)))]
mod tests;
