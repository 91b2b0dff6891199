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
        // Acquire on success: pairs with the Release swap in `end`; Release: a
        // `fork` child that sees the turn held sees what the caller noted before
        // (`HeldRefs::note_turn`). Relaxed on failure: the value is only
        // compared with `me`.
        self.state
            .compare_exchange(0, me, Ordering::AcqRel, Ordering::Relaxed)
            .map(|_| ())
    }

    /// `try_begin`, then `begin_slow`.
    #[cfg(test)]
    pub(crate) fn begin_noting_wait<E, W>(
        &self,
        me: usize,
        take_back: impl FnOnce() -> bool,
        waiting: impl FnOnce() -> W,
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
        self.begin_noting_wait(me, take_back, || (), held_by_caller, retired)
    }

    /// True when the turn is held under `mark`.
    #[cfg(all(test, unix, not(callgate_loom)))]
    pub(crate) fn is_held_under(&self, mark: usize) -> bool {
        // Relaxed: a look for the tests, which order it by other means.
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
        waiting: impl FnOnce() -> W,
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
        let _waiting = waiting();
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
        if self.state.load(Ordering::Relaxed) & ANNOTATED != 0 {
            // SAFETY: forwarded caller obligation; the turn is still held.
            return unsafe { self.end_slow(ANNOTATED) };
        }
        // SAFETY: forwarded caller obligation; not annotated.
        unsafe { self.end_begun() }
    }

    /// [`end`](Turn::end) for a turn that is not annotated, such as any
    /// [`try_begin`](Turn::try_begin) took (it takes only a state of 0).
    ///
    /// # Safety
    ///
    /// As for `end`, and the turn is not annotated.
    #[hot_path]
    pub(crate) unsafe fn end_begun(&self) -> bool {
        // Release: pairs with the Acquire of the next `begin`; Acquire: with
        // the Release of `retire`, whose thread's accesses then happen before
        // the caller lets the object go.
        let old = self.state.swap(0, Ordering::AcqRel);
        if old & (WAITING | DEFERRED) != 0 {
            // SAFETY: forwarded caller obligation; handed on just now.
            return unsafe { self.end_slow(old) };
        }
        false
    }

    /// The end of an annotated turn (still held: `old` is [`ANNOTATED`]), or
    /// of one a waiter or a retirement flagged (`old`, handed on by
    /// `end_begun` already).
    ///
    /// # Safety
    ///
    /// As for [`end`](Turn::end), where annotated; else `end_begun` has just
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
mod tests;
