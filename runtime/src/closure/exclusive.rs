//! The body of a `Closure::new` closure: an `FnMut` whose calls take
//! turns (the header's `turn`, [`Exclusive`]). A call from another thread
//! waits; one from the thread that holds the turn fails with the fallback.
//! A turn an abandoned call left is taken back once that call is certainly
//! gone ([`turn_holder_is_gone`]).
//!
//! The turn is also what keeps the closure alive during a call: the last
//! release retires the turn ([`retire_turn`]), and a call that holds it
//! drops the closure after it (`run_turn`). A call that waits holds a
//! reference until it has the turn ([`Waiting`]).

use core::cell::{Cell, UnsafeCell};
use core::ptr::NonNull;

use super::allocation::{Header, called_after_drop, release, retain};
use super::fork::WaitNote;
use super::hold::destroy_now;
use crate::boundary::{Frame, marked_call_is_gone};
use crate::failure::Failure;
use crate::stack::Mark;
use crate::sync::Turn;
use crate::thread;

/// An `FnMut` body.
pub(super) struct Exclusive<F> {
    /// The turn-holding call's mark ([`Frame::mark`]), written once it took
    /// the turn, read by a call of the same thread to tell if it is gone.
    holder: UnsafeCell<Mark>,
    body: UnsafeCell<F>,
}

// SAFETY: the body is reached only by `with`, during a turn, which one
// thread at a time holds: `F` moves between threads (`F: Send`) but is
// never shared.
unsafe impl<F: Send> Sync for Exclusive<F> {}

impl<F> Exclusive<F> {
    pub(super) fn new(body: F) -> Exclusive<F> {
        Exclusive {
            holder: UnsafeCell::new(Mark::new(0, 0)),
            body: UnsafeCell::new(body),
        }
    }

    /// Runs `run` on the body once no other thread is in it; an error if this
    /// thread already is (a re-entrant call through C). A turn an abandoned
    /// call left, or (in a `fork` child) a missing thread's, is taken over.
    /// Sets `destroy` when the closure was retired during the turn: the
    /// caller drops it once the call no longer uses it.
    ///
    /// # Safety
    ///
    /// The closure of `header`, whose body this is, is live (its owner's
    /// reference or a call in flight keeps it).
    #[hot_path]
    pub(super) unsafe fn with<O>(
        &self,
        frame: &Frame,
        header: NonNull<Header>,
        destroy: &Cell<bool>,
        run: impl FnOnce(&mut F) -> O,
    ) -> Result<O, Failure> {
        // SAFETY: live (caller obligation).
        let turn = unsafe { &(*header.as_ptr()).turn };
        // Thread marks are non-zero multiples of 16, as `Turn` needs (contexts
        // are 128-byte aligned).
        if let Err(held) = turn.try_begin(frame.thread_mark()) {
            // SAFETY: forwarded caller obligation.
            unsafe { self.begin_slow(frame.thread_mark(), header, held) }?;
        }
        // Ends the turn when `run` returns or unwinds.
        let _end = EndTurn(turn, destroy);
        // SAFETY: this thread holds the turn until `_end` drops.
        Ok(unsafe { self.in_turn(frame, run) })
    }

    /// Runs `run` on the body in a turn this thread holds for the call
    /// `frame` serves (taken by [`with`](Exclusive::with), or before the
    /// call started by `run_turn`, which ends it after the call).
    ///
    /// # Safety
    ///
    /// The calling thread took the turn for this call, under
    /// [`Frame::thread_mark`], and holds it until `run` returns or unwinds.
    #[hot_path]
    pub(super) unsafe fn in_turn<O>(&self, frame: &Frame, run: impl FnOnce(&mut F) -> O) -> O {
        // SAFETY: this thread holds the turn (caller obligation); only the
        // holder writes the mark.
        unsafe { *self.holder.get() = frame.mark() };
        // SAFETY: as above; only the holder reaches the body.
        run(unsafe { &mut *self.body.get() })
    }

    /// The rest of `with`'s taking of the turn, which its thread, marked
    /// `me`, found `held`: out of line, so the straight line passes none of
    /// the slow path's arguments.
    ///
    /// # Safety
    ///
    /// As for `with`.
    #[cold]
    #[inline(never)]
    unsafe fn begin_slow(
        &self,
        me: usize,
        header: NonNull<Header>,
        held: usize,
    ) -> Result<(), Failure> {
        // SAFETY: live (caller obligation).
        let turn = unsafe { &(*header.as_ptr()).turn };
        turn.begin_slow(
            me,
            held,
            // SAFETY: the turn is held under this thread's mark, so `holder` was
            // written on this thread's context, by it or an earlier owner (ordered
            // by the free list); other threads' writes by the turn's
            // Release/Acquire. (A holder that has not written its mark yet: see
            // `turn_holder_is_gone`.)
            || unsafe { turn_holder_is_gone(*self.holder.get()) },
            // SAFETY: live (caller obligation).
            || unsafe { Waiting::new(header) },
            reentered,
            // SAFETY: a retired turn is a dropped closure's, kept by the
            // tombstones (else C's call is a use after free).
            || unsafe { called_after_drop(header) },
        )
    }
}

/// True when the call marked `holder`, holding a `Closure::new` turn under
/// this thread's mark, is certainly gone, so the turn may be taken over:
///
/// - from any depth, when the thread's calls found it gone while recorded
///   and nobody claimed it since (`Context::claim_gone`): a call that took
///   the turn and has not written its mark yet (its body writes it, and
///   `run_turn` takes the turn just before the call starts) took it from a
///   call that ended it or that it claimed (a handler's `siglongjmp` after
///   a turn's end would break this: callbacks from signal handlers are
///   unsupported);
/// - else only from the thread's outermost call, by the holder's mark
///   ([`marked_call_is_gone`]): no call of the thread encloses it.
///
/// # Safety
///
/// Called from inside a call on this thread; `holder` is the mark of a
/// call made on the context serving it (by this thread or an earlier
/// owner).
#[cold]
#[inline(never)]
unsafe fn turn_holder_is_gone(holder: Mark) -> bool {
    let claimed = thread::current().is_some_and(|node| node.value.claim_gone(holder));
    // SAFETY: forwarded caller obligations.
    claimed || unsafe { marked_call_is_gone(holder) }
}

struct EndTurn<'a>(&'a Turn, &'a Cell<bool>);

impl Drop for EndTurn<'_> {
    #[hot_path]
    fn drop(&mut self) {
        // SAFETY: made only by `with` once its `begin` returned `Ok`, on that
        // thread, and dropped once (or never, if the call is abandoned).
        if unsafe { self.0.end() } {
            self.1.set(true);
        }
    }
}

/// A reference a call holds while it waits for the turn (a retirement
/// waits for none), noted in its context for a `fork` child
/// ([`WaitNote`]); given up once the call has the turn, which keeps the
/// closure alive from then on.
struct Waiting {
    header: NonNull<Header>,
    note: Option<WaitNote>,
}

impl Waiting {
    /// # Safety
    ///
    /// The closure of `header` is live.
    #[cold]
    #[inline(never)]
    unsafe fn new(header: NonNull<Header>) -> Waiting {
        // SAFETY: live (caller obligation).
        unsafe { retain(header) };
        // SAFETY: just taken, given up after the note is erased.
        let note = Some(unsafe { WaitNote::new(header) });
        Waiting { header, note }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        // Erased before the reference is given up, so a `fork` child never
        // gives it up twice.
        drop(self.note.take());
        // SAFETY: taken in `new`; the call has the turn now (its end or a
        // retirement's flag keeps the closure), or aborts.
        unsafe { release(self.header) };
    }
}

/// The last release of a `Closure::new`: retires its turn, and drops it
/// now if no call holds the turn (else the holder does, in `run_held`).
///
/// # Safety
///
/// The caller just released the closure's last reference.
pub(super) unsafe fn retire_turn(header: NonNull<Header>) {
    // SAFETY: alive until dropped (caller obligation); retired once, with no
    // reference left, so no call waits.
    if unsafe { (*header.as_ptr()).turn.retire() } {
        // SAFETY: no reference left, no call holds the turn.
        unsafe { destroy_now(header) };
    }
}

#[cold]
#[inline(never)]
fn reentered() -> Failure {
    Failure::new(
        "the closure was called again from inside its own call on this thread; an `FnMut` \
         cannot run twice at once (use `Closure::concurrent` with an `Fn`)",
    )
}
