//! Turns at something one thread at a time may use: see [`Turn`].

use core::sync::atomic::{AtomicPtr as CoreAtomicPtr, Ordering as CoreOrdering};

use super::{AtomicUsize, Bell, Ordering};
use crate::valgrind;

/// Turns at something one thread at a time may use (a `Closure::new`
/// body). A thread is named by a *mark*, a non-zero multiple of 16 no
/// other thread uses while it may hold a turn (its context's address), so
/// a thread asking for a turn it holds gets an error, not a deadlock.
///
/// Waiters flag `state` and sleep on `bell`, which the end of a flagged
/// turn rings; no lock is held on Linux ([`Bell`]), so `fork` is safe.
///
/// A turn also keeps what it guards alive: [`retire`](Turn::retire) says
/// whether the object may go now, or the holder's [`end`](Turn::end) will
/// say so; no turn is given after that.
/// Under valgrind `state` carries [`ANNOTATED`], which sends every turn
/// through the slow paths that tell helgrind (it does not model atomics).
pub(crate) struct Turn {
    /// The holder's mark (0: nobody's), with [`WAITING`] and [`ANNOTATED`].
    state: AtomicUsize,
    /// Rung at the end of a turn flagged [`WAITING`].
    bell: Bell,
}

/// The marks of threads a `fork` left behind inside calls (a leaked list):
/// never any thread's again (`thread::reclaim_orphans`), so a turn held
/// under one can be taken over. A `core` atomic: loom models never fork.
static ORPHANED: CoreAtomicPtr<Vec<usize>> = CoreAtomicPtr::new(core::ptr::null_mut());

/// Adds `marks` to [`ORPHANED`].
///
/// # Safety
///
/// The caller is the only thread of a `fork` child (its child handler),
/// and no thread of this process uses any of `marks` again.
#[cfg_attr(any(callgate_loom, not(unix)), allow(dead_code))]
pub(crate) unsafe fn orphan_marks(marks: &[usize]) {
    if marks.is_empty() {
        return;
    }
    // Relaxed: the child has one thread, which reads its own view.
    let old = ORPHANED.load(CoreOrdering::Relaxed);
    let mut all = if old.is_null() {
        Vec::new()
    } else {
        // SAFETY: a non-null `ORPHANED` is a leaked `Box<Vec<usize>>`,
        // replaced only here, on the only thread (caller obligation).
        unsafe { Box::from_raw(old) }.to_vec()
    };
    all.extend_from_slice(marks);
    // Release: pairs with the Acquire in `is_orphaned`.
    ORPHANED.store(Box::into_raw(Box::new(all)), CoreOrdering::Release);
}

/// True when `mark` is in [`ORPHANED`].
pub(crate) fn is_orphaned(mark: usize) -> bool {
    // Acquire: pairs with the Release in `orphan_marks`.
    let orphaned = ORPHANED.load(CoreOrdering::Acquire);
    // SAFETY: a non-null `ORPHANED` is a leaked `Vec`, freed only when a
    // child handler replaces it, when no other thread exists.
    !orphaned.is_null() && unsafe { &*orphaned }.contains(&mark)
}

/// The bit of [`Turn::state`] saying that a thread may be waiting.
const WAITING: usize = 1;
/// The bit of [`Turn::state`] that sends every turn to helgrind.
const ANNOTATED: usize = 2;
/// The bit of [`Turn::state`] saying that the object was retired during
/// the turn held: its holder's `end` lets it go.
const DEFERRED: usize = 4;
/// The bit of [`Turn::state`] saying that the object is gone: no turn is
/// given any more.
const RETIRED: usize = 8;
/// The bits of [`Turn::state`] that are not a mark.
const FLAGS: usize = WAITING | ANNOTATED | DEFERRED | RETIRED;

impl Turn {
    /// Turns announced to helgrind if `annotated` (`valgrind::running()`,
    /// which the caller has asked already; the tests take both).
    pub(crate) fn announced(annotated: bool) -> Turn {
        Turn {
            state: AtomicUsize::new(if annotated { ANNOTATED } else { 0 }),
            bell: Bell::new(),
        }
    }

    /// Takes the turn for the thread marked `me` if it is free (then the
    /// previous holders' accesses happen before what follows); else returns
    /// the state found, for [`begin_slow`](Turn::begin_slow).
    #[hot_path]
    pub(crate) fn try_begin(&self, me: usize) -> Result<(), usize> {
        debug_assert!(
            me != 0 && me & FLAGS == 0,
            "a mark is a non-zero multiple of 16"
        );
        // Acquire on success: pairs with the Release swap in `end`. Relaxed on
        // failure: the value is only compared with `me`.
        self.state
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| ())
    }

    /// `try_begin`, then `begin_slow`.
    #[cfg(test)]
    pub(crate) fn begin_noting_wait<E, W>(
        &self,
        me: usize,
        take_back: impl FnOnce() -> bool,
        waiting: impl FnOnce(&Turn) -> W,
        held_by_caller: impl FnOnce() -> E,
        retired: impl FnOnce() -> E,
    ) -> Result<(), E> {
        match self.try_begin(me) {
            Ok(()) => Ok(()),
            Err(held) => self.begin_slow(me, held, take_back, waiting, held_by_caller, retired),
        }
    }

    /// `begin_noting_wait` with nothing to note while waiting.
    #[cfg(test)]
    pub(crate) fn begin<E>(
        &self,
        me: usize,
        take_back: impl FnOnce() -> bool,
        held_by_caller: impl FnOnce() -> E,
        retired: impl FnOnce() -> E,
    ) -> Result<(), E> {
        self.begin_noting_wait(me, take_back, |_| (), held_by_caller, retired)
    }

    /// True when the turn is held under `mark`.
    #[cfg(all(test, unix, not(callgate_loom)))]
    pub(crate) fn is_held_under(&self, mark: usize) -> bool {
        // Relaxed: the child has one thread, which reads its own view.
        self.state.load(Ordering::Relaxed) & !FLAGS == mark
    }

    /// Takes the turn for the thread marked `me` after
    /// [`try_begin`](Turn::try_begin) found it `held` (or annotated, or
    /// retired), waiting while another thread holds it. If it is held under
    /// `me`, `take_back` tells whether that call of this thread is gone (the
    /// turn is then this call's) or running (the error `held_by_caller`
    /// makes). In a `fork` child, a turn held under an orphaned mark is taken
    /// over. A retired turn is the error `retired` makes. On `Ok`, the
    /// previous holders' accesses happen before what follows.
    ///
    /// `waiting`'s value lives while the call waits, until it has the turn
    /// or the error.
    #[cold]
    #[inline(never)]
    pub(crate) fn begin_slow<E, W>(
        &self,
        me: usize,
        mut held: usize,
        take_back: impl FnOnce() -> bool,
        waiting: impl FnOnce(&Turn) -> W,
        held_by_caller: impl FnOnce() -> E,
        retired: impl FnOnce() -> E,
    ) -> Result<(), E> {
        if held & RETIRED != 0 {
            return Err(retired());
        }
        let annotated = held & ANNOTATED;
        // `state` holds `me` only if this thread stored it, or an earlier owner
        // of its context (ordered by the free list).
        if held & !FLAGS == me {
            if !take_back() {
                return Err(held_by_caller());
            }
            // A signal handler's call may have taken the turn back already.
            // Relaxed: only this thread stores its mark; others only flag it.
            let now = self.state.load(Ordering::Relaxed);
            if now & !FLAGS == me {
                if annotated != 0 {
                    valgrind::happens_after(&raw const self.state);
                }
                return Ok(());
            }
            held = now;
        }
        // Only a child handler orphans marks, when no other thread exists.
        while is_orphaned(held & !FLAGS) {
            // Acquire on success: as in `begin`. Flags kept, so a waiter is
            // woken and a retirement kept.
            match self.state.compare_exchange(
                held,
                me | (held & FLAGS),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if annotated != 0 {
                        valgrind::happens_after(&raw const self.state);
                    }
                    return Ok(());
                }
                Err(now) => held = now,
            }
        }
        let _waiting = waiting(self);
        loop {
            // The bell's count before `state`, so an `end` this read misses wakes
            // the wait below (see `Bell`).
            let seen = self.bell.rings();
            // Relaxed: as on `begin`'s failure.
            let held = self.state.load(Ordering::Relaxed);
            if held & RETIRED != 0 {
                return Err(retired());
            }
            if held & !FLAGS == 0 {
                // Taken with WAITING set: others may still wait. Acquire: as above.
                if self
                    .state
                    .compare_exchange(
                        held,
                        me | annotated | WAITING,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    if annotated != 0 {
                        valgrind::happens_after(&raw const self.state);
                    }
                    return Ok(());
                }
                continue;
            }
            // Relaxed: the flag publishes no data; the holder's `end` swap either
            // sees it and rings, or this fails and the loop looks again.
            if held & WAITING == 0
                && self
                    .state
                    .compare_exchange(held, held | WAITING, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            self.bell.wait(seen);
        }
    }

    /// Ends the calling thread's turn and wakes the threads waiting for it;
    /// true when the object was [retired](Turn::retire) during the turn: the
    /// caller lets it go.
    ///
    /// # Safety
    ///
    /// The calling thread holds the turn: its
    /// [`try_begin`](Turn::try_begin) or [`begin_slow`](Turn::begin_slow) returned `Ok`, and it
    /// has not called `end` since.
    #[hot_path]
    pub(crate) unsafe fn end(&self) -> bool {
        // Relaxed: only ANNOTATED is looked at, which never changes.
        let old = if self.state.load(Ordering::Relaxed) & ANNOTATED != 0 {
            ANNOTATED
        } else {
            // Release: pairs with the Acquire of the next `begin`; Acquire: with
            // the Release of `retire`, whose thread's accesses then happen before
            // the caller lets the object go.
            self.state.swap(0, Ordering::AcqRel)
        };
        if old & (WAITING | DEFERRED | ANNOTATED) != 0 {
            // SAFETY: forwarded caller obligation; `end` handed the turn on
            // unless annotated.
            return unsafe { self.end_slow(old) };
        }
        false
    }

    /// The end of an annotated turn (still held: `old` is [`ANNOTATED`]), or
    /// of one a waiter or a retirement flagged (`old`, handed on by `end`
    /// already).
    ///
    /// # Safety
    ///
    /// As for [`end`](Turn::end), where annotated; else `end` has just
    /// handed the calling thread's turn on.
    #[cold]
    #[inline(never)]
    unsafe fn end_slow(&self, mut old: usize) -> bool {
        let annotated = old & ANNOTATED;
        if annotated != 0 {
            valgrind::happens_before(&raw const self.state);
            // AcqRel: as in `end`. Free again, still ANNOTATED.
            old = self.state.swap(ANNOTATED, Ordering::AcqRel);
        }
        if old & DEFERRED != 0 {
            if annotated != 0 {
                // The retirement's accesses (`retire`) before the object goes.
                valgrind::happens_after(&raw const self.state);
            }
            // Relaxed: nothing is published; a call that finds the turn free
            // meanwhile is a call after the retirement, which the flag catches
            // from now on.
            self.state.store(RETIRED | annotated, Ordering::Relaxed);
        }
        if old & (WAITING | DEFERRED) != 0 {
            // Waiters read the bell's count before `state`: this ring wakes
            // them (to the error, after a retirement).
            self.bell.ring();
        }
        old & DEFERRED != 0
    }

    /// Retires the object the turns are at, once: true when no turn is held
    /// (the caller lets it go now); else the holder's [`end`](Turn::end)
    /// returns true. A turn asked for afterwards is an error.
    ///
    /// # Safety
    ///
    /// Called once; no call may wait for the turn any more (each call that
    /// waits keeps the object alive by other means).
    pub(crate) unsafe fn retire(&self) -> bool {
        // Relaxed: the compare-and-swap reads it again.
        let mut state = self.state.load(Ordering::Relaxed);
        if state & ANNOTATED != 0 {
            // For helgrind: this thread's accesses happen before a holder's
            // `end` lets the object go.
            valgrind::happens_before(&raw const self.state);
        }
        loop {
            let free = state & !FLAGS == 0;
            let flag = if free { RETIRED } else { DEFERRED };
            // Acquire: pairs with the Release of the last `end`, whose holder's
            // accesses then happen before the object goes; Release: pairs with
            // the Acquire of the holder's `end` in turn.
            match self.state.compare_exchange(
                state,
                state | flag,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if free && state & ANNOTATED != 0 {
                        valgrind::happens_after(&raw const self.state);
                    }
                    return free;
                }
                Err(now) => state = now,
            }
        }
    }
}

#[cfg(all(test, not(callgate_loom)))]
mod tests {
    use super::Turn;
    use std::cell::{Cell, UnsafeCell};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// The errors the tests ask `begin` for.
    #[derive(Debug, PartialEq, Eq)]
    enum Error {
        HeldByCaller,
        Retired,
    }

    /// How a `begin` went.
    #[derive(Debug, PartialEq, Eq)]
    enum Asked {
        /// The turn was free, or handed on.
        Anew,
        /// Held under the asking mark, and taken back (`take_back` said so).
        Back,
        /// Held under the asking mark, and refused.
        Refused,
        /// Retired.
        Retired,
    }

    /// Asks for the turn under `me`; `holder_gone` is what `take_back`
    /// answers if asked.
    fn ask(turn: &Turn, me: usize, holder_gone: bool) -> Asked {
        let asked = Cell::new(false);
        let take_back = || {
            asked.set(true);
            holder_gone
        };
        match turn.begin(me, take_back, || Error::HeldByCaller, || Error::Retired) {
            Ok(()) if asked.get() => Asked::Back,
            Ok(()) => Asked::Anew,
            Err(Error::HeldByCaller) => Asked::Refused,
            Err(Error::Retired) => Asked::Retired,
        }
    }

    /// What the turns guard in the test: a count that a data race would
    /// lose increments of, and a flag that catches two holders at once.
    struct Guarded {
        turn: Turn,
        inside: AtomicBool,
        count: UnsafeCell<u64>,
    }

    // SAFETY: `count` is reached only during a turn (the test's threads
    // below).
    unsafe impl Sync for Guarded {}

    fn contend(annotated: bool) {
        const THREADS: usize = 4;
        // Fewer under Miri, which interprets every access.
        const TURNS: u64 = if cfg!(miri) { 500 } else { 20_000 };
        let guarded = Guarded {
            turn: Turn::announced(annotated),
            inside: AtomicBool::new(false),
            count: UnsafeCell::new(0),
        };
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let guarded = &guarded;
                scope.spawn(move || {
                    let me = (thread + 1) * 16;
                    for _ in 0..TURNS {
                        guarded
                            .turn
                            .begin(me, || false, || Error::HeldByCaller, || Error::Retired)
                            .unwrap();
                        assert!(!guarded.inside.swap(true, Ordering::Relaxed), "two holders");
                        // SAFETY: during this thread's turn.
                        unsafe { *guarded.count.get() += 1 };
                        guarded.inside.store(false, Ordering::Relaxed);
                        // SAFETY: this thread's `begin` returned `Ok`.
                        assert!(!unsafe { guarded.turn.end() });
                    }
                });
            }
        });
        assert_eq!(guarded.count.into_inner(), THREADS as u64 * TURNS);
    }

    #[test]
    fn turns_exclude_each_other_under_contention() {
        contend(false);
    }

    #[test]
    fn annotated_turns_exclude_each_other_under_contention() {
        contend(true);
    }

    /// With the turn held under mark 16: a thread (mark 32) waits for it
    /// while `then` runs on this thread, which must end the turn; the
    /// waiter then takes and ends a turn of its own.
    fn while_a_thread_waits(turn: &Turn, then: impl FnOnce()) {
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                assert_eq!(ask(turn, 32, true), Asked::Anew);
                // SAFETY: this thread's `begin` returned `Ok`.
                assert!(!unsafe { turn.end() });
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiter.is_finished(), "the waiter took a held turn");
            then();
        });
        assert_eq!(ask(turn, 16, false), Asked::Anew);
        // SAFETY: this thread's `begin` returned `Ok`.
        assert!(!unsafe { turn.end() });
    }

    fn ask_again(annotated: bool) {
        let turn = Turn::announced(annotated);
        assert_eq!(ask(&turn, 16, false), Asked::Anew);
        assert_eq!(ask(&turn, 16, false), Asked::Refused);
        // Still the holder's: another thread waits until it ends.
        while_a_thread_waits(&turn, || {
            // SAFETY: this thread's first `begin(16)` returned `Ok`.
            assert!(!unsafe { turn.end() });
        });
    }

    #[test]
    fn a_turn_asked_for_again_by_its_holder_is_an_error() {
        ask_again(false);
    }

    #[test]
    fn an_annotated_turn_asked_for_again_by_its_holder_is_an_error() {
        ask_again(true);
    }

    /// A turn whose holder is gone (its call abandoned) is taken back by
    /// the next call under its mark that knows so, and a thread waiting
    /// for it is woken when that call ends its turn.
    fn take_back(annotated: bool) {
        let turn = Turn::announced(annotated);
        // The call that takes the turn is then abandoned: no `end`.
        assert_eq!(ask(&turn, 16, true), Asked::Anew);
        while_a_thread_waits(&turn, || {
            // A call nested in a running one of the same thread must not
            // take it back.
            assert_eq!(ask(&turn, 16, false), Asked::Refused);
            assert_eq!(ask(&turn, 16, true), Asked::Back);
            // SAFETY: this thread's `begin` returned `Ok`.
            assert!(!unsafe { turn.end() });
        });
    }

    /// A call of the holder's thread that interrupted the call taking the
    /// turn back (a signal handler's) took it back first and ended it: the
    /// interrupted call takes the turn as a free one.
    fn taken_back_meanwhile(annotated: bool) {
        let turn = Turn::announced(annotated);
        // The call that takes the turn is then abandoned: no `end`.
        assert_eq!(ask(&turn, 16, true), Asked::Anew);
        let take_back = || {
            assert_eq!(ask(&turn, 16, true), Asked::Back, "the interrupting call");
            // SAFETY: the interrupting call's `begin` returned `Ok`.
            assert!(!unsafe { turn.end() });
            true
        };
        assert_eq!(
            turn.begin(16, take_back, || Error::HeldByCaller, || Error::Retired),
            Ok(())
        );
        while_a_thread_waits(&turn, || {
            // SAFETY: this thread's `begin` returned `Ok`.
            assert!(!unsafe { turn.end() });
        });
    }

    #[test]
    fn a_turn_taken_back_by_an_interrupting_call_is_taken_back_once() {
        taken_back_meanwhile(false);
    }

    #[test]
    fn an_annotated_turn_taken_back_by_an_interrupting_call_is_taken_back_once() {
        taken_back_meanwhile(true);
    }

    /// A call that waits for the turn notes so until it has it; its taking
    /// shows in the turn's state by then. A call that does not wait notes
    /// nothing.
    #[cfg(unix)]
    #[test]
    fn a_waiting_call_notes_its_wait_until_it_has_the_turn() {
        /// Set when the note is dropped, which checks the turn's state.
        struct Note<'a>(&'a Turn, &'a AtomicBool);
        impl Drop for Note<'_> {
            fn drop(&mut self) {
                assert!(self.0.is_held_under(32), "the turn is the waiter's");
                self.1.store(true, Ordering::SeqCst);
            }
        }
        let turn = Turn::announced(false);
        let noted = AtomicBool::new(false);
        let dropped = AtomicBool::new(false);
        let not_waiting = |_: &Turn| -> Note<'_> { panic!("noted a wait for a free turn") };
        turn.begin_noting_wait(
            16,
            || false,
            not_waiting,
            || Error::HeldByCaller,
            || Error::Retired,
        )
        .unwrap();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let waiting = |asked: &Turn| {
                    assert!(core::ptr::eq(asked, &turn));
                    noted.store(true, Ordering::SeqCst);
                    Note(&turn, &dropped)
                };
                turn.begin_noting_wait(
                    32,
                    || false,
                    waiting,
                    || Error::HeldByCaller,
                    || Error::Retired,
                )
                .unwrap();
                assert!(
                    dropped.load(Ordering::SeqCst),
                    "the note lasted past the wait"
                );
                // SAFETY: this thread's `begin_noting_wait` returned `Ok`.
                assert!(!unsafe { turn.end() });
            });
            while !noted.load(Ordering::SeqCst) {
                std::thread::yield_now();
            }
            assert!(!dropped.load(Ordering::SeqCst));
            assert!(turn.is_held_under(16));
            // SAFETY: this thread's `begin_noting_wait` returned `Ok`.
            assert!(!unsafe { turn.end() });
        });
        assert!(turn.is_held_under(0), "free");
    }

    #[test]
    fn a_turn_left_by_a_call_that_is_gone_is_taken_back() {
        take_back(false);
    }

    #[test]
    fn an_annotated_turn_left_by_a_call_that_is_gone_is_taken_back() {
        take_back(true);
    }

    /// A free turn retired lets its object go at once; one held lets it go
    /// at its end; a turn asked for after either is an error, also for a
    /// call that waited for it.
    fn retire(annotated: bool) {
        let turn = Turn::announced(annotated);
        // SAFETY: once.
        assert!(unsafe { turn.retire() }, "free: gone now");
        assert_eq!(ask(&turn, 16, false), Asked::Retired);

        let turn = Turn::announced(annotated);
        assert_eq!(ask(&turn, 16, false), Asked::Anew);
        // SAFETY: once; no call waits.
        assert!(!unsafe { turn.retire() }, "held: gone at its end");
        // A call after the retirement (C's use after free) waits, then fails.
        std::thread::scope(|scope| {
            let late = scope.spawn(|| ask(&turn, 32, false));
            std::thread::sleep(std::time::Duration::from_millis(20));
            // SAFETY: this thread's `begin` returned `Ok`.
            assert!(unsafe { turn.end() }, "the holder lets it go");
            assert_eq!(late.join().unwrap(), Asked::Retired);
        });
        assert_eq!(ask(&turn, 16, false), Asked::Retired);
    }

    #[test]
    fn a_retired_turn_lets_its_object_go_once_and_gives_no_more_turns() {
        retire(false);
    }

    #[test]
    fn an_annotated_retired_turn_lets_its_object_go_once_and_gives_no_more_turns() {
        retire(true);
    }
}
