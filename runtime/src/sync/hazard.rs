//! Hazard words: a thread announces the object its running call uses, so
//! that whoever retires the object defers its destruction to the end of
//! that call. See [`Hazard`] and [`Retirement`].
//!
//! They keep a `Closure::concurrent` alive for the calls in it without a
//! shared counter: a call writes only its own thread's word, and the owner
//! pays only when it lets the object go, by reading every thread's word.
//!
//! # Atomic orderings
//!
//! * [`announce`](Hazard::announce) is a Release store, of a value the
//!   owner reads back with Relaxed loads (no other thread stores a
//!   non-zero value). The C caller's own synchronisation orders the
//!   announcement of a running call before the owner's letting go, and so
//!   before the retirement's read. (A call that starts after the retirement
//!   is a call of a freed object, the caller's error.) Release so that an
//!   announcement overwriting a withdrawn one still carries the withdrawn
//!   call's uses to a retirement that reads it.
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

/// The bit of a [`Hazard`] word saying that the announced object's
/// retirement waits for this call.
const DEFERRED: usize = 1;

/// The bit of a [`Hazard`] word that the announcing call chose to carry:
/// it sends the withdrawal down the caller's slow path (to tell helgrind).
pub(crate) const MARKED: usize = 2;

/// The bits of a [`Hazard`] word that are not an object's address.
const FLAGS: usize = DEFERRED | MARKED;

/// Where retiring an object starts: far above any number of holders, so
/// that holders released before the retirement counted them all cannot
/// bring the count to zero.
const BIAS: usize = usize::MAX / 2;

/// One thread's hazard word: the address of the object its running call
/// uses (0 for none), which the thread *announces* before the call's first
/// use and *withdraws* after its last. A thread that retires the object
/// meanwhile reads every thread's word, and leaves the object to be
/// destroyed by the last call it found announcing it.
///
/// One word serves one call at a time: a call that finds it taken (by an
/// outer or abandoned call) keeps its object alive another way.
pub(crate) struct Hazard {
    /// The announced object's address with [`FLAGS`], or 0.
    word: AtomicUsize,
}

impl Hazard {
    pub(crate) fn new() -> Hazard {
        Hazard {
            word: AtomicUsize::new(0),
        }
    }

    /// Announces `object`, with [`MARKED`] in `flags` or not, unless the
    /// word announces something already: false then, and nothing is
    /// announced.
    ///
    /// # Safety
    ///
    /// - The caller is the thread the word belongs to (only it announces
    ///   and withdraws), and withdraws what it announced before anything
    ///   else may announce through the word.
    /// - `object` is a non-zero multiple of 4, of an object that stays
    ///   alive until a [`Retirement`] of it has read this word, and that
    ///   is not retired before the announcement (see the module docs).
    #[hot_path]
    pub(crate) unsafe fn announce(&self, object: usize, flags: usize) -> bool {
        debug_assert!(object != 0 && object & FLAGS == 0 && flags & !MARKED == 0);
        // Relaxed: only this thread stores a non-zero value (retirements
        // only flag one), so this reads its own last store or a flag
        // added to it.
        if self.word.load(Ordering::Relaxed) != 0 {
            crate::hint::rarely_taken();
            return false;
        }
        // Release: see "Atomic orderings" in the module docs.
        self.word.store(object | flags, Ordering::Release);
        true
    }

    /// Ends the announcement the word holds: the word as it was, the
    /// object's address with the flags it was announced with and
    /// [`DEFERRED`] if a retirement of the object waits for this call.
    /// Test it with [`deferred`](Hazard::deferred); when set, the caller
    /// ends its part with the object's [`Retirement::release`].
    ///
    /// # Safety
    ///
    /// The caller is the thread the word belongs to, done with what it
    /// announced (its call returned, or is certainly gone).
    #[hot_path]
    pub(crate) unsafe fn withdraw(&self) -> usize {
        // AcqRel: see "Atomic orderings" in the module docs.
        self.word.swap(0, Ordering::AcqRel)
    }

    /// True when `withdrawn`, a value [`withdraw`](Hazard::withdraw)
    /// returned, says a retirement waits for the call.
    #[hot_path]
    pub(crate) fn deferred(withdrawn: usize) -> bool {
        withdrawn & DEFERRED != 0
    }

    /// The object's address in `withdrawn`, a value
    /// [`withdraw`](Hazard::withdraw) returned (0 for none).
    #[hot_path]
    pub(crate) fn object(withdrawn: usize) -> usize {
        withdrawn & !FLAGS
    }

    /// For a retirement of `object`: flags the word deferred if it
    /// announces `object`, and says so.
    fn defer(&self, object: usize) -> bool {
        // Acquire: pairs with the announcing call's Release `withdraw` (or
        // a later announcement), so a word read clear has the call's uses
        // before what follows.
        let mut seen = self.word.load(Ordering::Acquire);
        while seen & !FLAGS == object && seen & DEFERRED == 0 {
            // AcqRel on success: Release, so the holder's `withdraw` that
            // reads the flag orders this retirement's start before its
            // part of `release`; Acquire as above. Acquire on failure, as
            // the load.
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

/// How many calls an object's destruction still waits for, once it is
/// retired: the holders [`retire`](Retirement::retire) found announcing
/// it. Lives in the object.
pub(crate) struct Retirement {
    holders: AtomicUsize,
}

impl Retirement {
    pub(crate) fn new() -> Retirement {
        Retirement {
            holders: AtomicUsize::new(0),
        }
    }

    /// Retires `object`, whose owner let go of it: reads every hazard
    /// word in `hazards`, and defers to each that announces it. True when
    /// none does, or all of those withdrew meanwhile and released: the
    /// caller destroys the object now. Else the holder whose
    /// [`release`](Retirement::release) is the last does.
    ///
    /// # Safety
    ///
    /// - `object` is the address of the object this is in, a non-zero
    ///   multiple of 4, retired once.
    /// - `hazards` yields every hazard word through which a call of
    ///   `object` may have announced it (every thread's).
    pub(crate) unsafe fn retire<'a>(
        &self,
        object: usize,
        hazards: impl IntoIterator<Item = &'a Hazard>,
    ) -> bool {
        // Relaxed: published to the holders by the Release part of each
        // `defer` that succeeds, before any of them can decrement.
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

    /// A holder whose [`withdraw`](Hazard::withdraw) was deferred to is
    /// done; true for the last one: the caller destroys the object now.
    ///
    /// # Safety
    ///
    /// The caller withdrew an announcement of the object this is in that
    /// a retirement deferred to, and releases once for it.
    pub(crate) unsafe fn release(&self) -> bool {
        // AcqRel: see "Atomic orderings" in the module docs.
        self.holders.fetch_sub(1, Ordering::AcqRel) == 1
    }
}

#[cfg(all(test, not(callgate_loom)))]
mod tests {
    use super::*;

    const OBJECT: usize = 0x1000;

    #[test]
    fn an_unannounced_object_is_destroyed_at_once() {
        let (hazards, retirement) = ([Hazard::new(), Hazard::new()], Retirement::new());
        // SAFETY: one thread plays every part.
        unsafe {
            assert!(hazards[0].announce(0x2000, 0));
            assert!(retirement.retire(OBJECT, &hazards));
            assert_eq!(hazards[0].withdraw(), 0x2000);
        }
    }

    #[test]
    fn the_last_holder_destroys() {
        let (hazards, retirement) = ([Hazard::new(), Hazard::new()], Retirement::new());
        // SAFETY: one thread plays every part.
        unsafe {
            assert!(hazards[0].announce(OBJECT, 0));
            assert!(hazards[1].announce(OBJECT, MARKED));
            assert!(!hazards[1].announce(0x2000, 0), "the word is taken");
            assert!(!retirement.retire(OBJECT, &hazards));
            let first = hazards[1].withdraw();
            assert_eq!(Hazard::object(first), OBJECT);
            assert!(Hazard::deferred(first) && first & MARKED != 0);
            assert!(!retirement.release());
            let last = hazards[0].withdraw();
            assert!(Hazard::deferred(last) && last & MARKED == 0);
            assert!(retirement.release());
            assert_eq!(hazards[0].withdraw(), 0);
        }
    }

    #[test]
    fn a_call_that_withdrew_is_not_waited_for() {
        let (hazards, retirement) = ([Hazard::new()], Retirement::new());
        // SAFETY: one thread plays every part.
        unsafe {
            assert!(hazards[0].announce(OBJECT, 0));
            assert!(!Hazard::deferred(hazards[0].withdraw()));
            assert!(retirement.retire(OBJECT, &hazards));
        }
    }

    #[test]
    fn calls_on_many_threads_and_a_retirement_destroy_once() {
        use std::sync::atomic::AtomicU32;
        use std::sync::{Arc, Barrier};
        // Fewer under Miri, which interprets every access.
        for round in 0..if cfg!(miri) { 20 } else { 200 } {
            let hazards: Arc<Vec<Hazard>> = Arc::new((0..4).map(|_| Hazard::new()).collect());
            let retirement = Arc::new(Retirement::new());
            let destroyed = Arc::new(AtomicU32::new(0));
            let start = Arc::new(Barrier::new(5));
            let holders: Vec<_> = (0..4)
                .map(|i| {
                    let (hazards, retirement, destroyed, start) = (
                        Arc::clone(&hazards),
                        Arc::clone(&retirement),
                        Arc::clone(&destroyed),
                        Arc::clone(&start),
                    );
                    std::thread::spawn(move || {
                        // SAFETY: thread `i` owns word `i`; announced
                        // before the retirement starts (the barrier).
                        unsafe { assert!(hazards[i].announce(OBJECT, 0)) };
                        start.wait();
                        for _ in 0..(round % 7) * 10 {
                            std::hint::spin_loop();
                        }
                        // SAFETY: as above.
                        let withdrawn = unsafe { hazards[i].withdraw() };
                        // SAFETY: deferred to, released once.
                        if Hazard::deferred(withdrawn) && unsafe { retirement.release() } {
                            destroyed.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            start.wait();
            // SAFETY: retired once; every word is in `hazards`.
            if unsafe { retirement.retire(OBJECT, hazards.iter()) } {
                destroyed.fetch_add(1, Ordering::Relaxed);
            }
            for holder in holders {
                holder.join().unwrap();
            }
            assert_eq!(destroyed.load(Ordering::Relaxed), 1, "round {round}");
        }
    }
}
