//! The body of a `Closure::new` closure: an `FnMut` whose calls take
//! turns ([`Exclusive`]). A call from another thread waits for the turn;
//! one from the thread that holds it fails with the fallback (it re-enters
//! the closure, or a call of the thread is suspended in it on another
//! stack). A turn left held by an abandoned call is taken back once that
//! call is certainly gone ([`turn_holder_is_gone`]).

use core::cell::UnsafeCell;
use core::ptr::NonNull;

use super::allocation::{Header, release};
use super::fork::WaitNote;
use crate::boundary::{Frame, marked_call_is_gone};
use crate::failure::Failure;
use crate::stack::Mark;
use crate::sync::Turn;
use crate::thread;

/// An `FnMut` body and its turn.
pub(super) struct Exclusive<F> {
    /// Whose turn it is to run the body (threads named by their
    /// [`Frame::thread_mark`]).
    turn: Turn,
    /// The mark of the call holding the turn, written by it after taking
    /// it ([`Frame::mark`]): read only by a call that finds the turn held
    /// under its own thread's mark, to tell whether that call is gone.
    holder: UnsafeCell<Mark>,
    body: UnsafeCell<F>,
}

// SAFETY: the body is reached only by `with`, during a turn, which one
// thread at a time holds (`Turn`), so sharing an `Exclusive` moves `F`
// between threads (hence `F: Send`) but never shares it.
unsafe impl<F: Send> Sync for Exclusive<F> {}

impl<F> Exclusive<F> {
    pub(super) fn new(body: F) -> Exclusive<F> {
        Exclusive {
            turn: Turn::new(),
            holder: UnsafeCell::new(Mark::new(0, 0)),
            body: UnsafeCell::new(body),
        }
    }

    /// Runs `run` on the body once no other thread is in it; an error if
    /// this thread already is (a re-entrant call through C). `frame` is
    /// the call's.
    ///
    /// A call abandoned inside the body (a `longjmp`, its thread's exit)
    /// leaves its turn held and its reference taken. A later call of the
    /// thread that finds it certainly gone ([`turn_holder_is_gone`]) takes
    /// the turn back and gives up that reference.
    ///
    /// In a `fork` child, a turn held by a thread the child lacks is taken
    /// over likewise (`Turn::begin_noting_wait`); a waiting call notes its
    /// wait in its context so such a child gives up its reference too
    /// ([`WaitNote`]).
    ///
    /// # Safety
    ///
    /// The call holds a reference to the closure of `header`, whose body
    /// this is.
    #[hot_path]
    pub(super) unsafe fn with<O>(
        &self,
        frame: &Frame,
        header: NonNull<Header>,
        run: impl FnOnce(&mut F) -> O,
    ) -> Result<O, Failure> {
        // A thread mark (`Frame::thread_mark`) is non-zero and a multiple
        // of 4, as `Turn` needs: contexts are 128-byte aligned.
        self.turn.begin_noting_wait(
            frame.thread_mark(),
            // SAFETY: the turn is held under this thread's mark, so
            // `holder` was written on this thread's context: by this
            // thread, or by an earlier owner, ordered by the free list.
            // Other threads' writes are ordered by the turn's
            // Release/Acquire. (A call that took the turn and has not
            // written its mark yet: see `turn_holder_is_gone`.)
            || unsafe { turn_holder_is_gone(*self.holder.get()) },
            || {
                // SAFETY: the turn was held by a call that will never end
                // it, which took a reference (every `FnMut` call does,
                // before its turn) and will never give it up; this call
                // holds one more, so the count stays above 0.
                unsafe { release(header) };
            },
            // SAFETY: this call holds a reference (caller obligation),
            // which the note names until the call has the turn.
            |turn| unsafe { WaitNote::new(header, turn) },
            reentered,
        )?;
        // SAFETY: this thread holds the turn, and only the holder writes
        // its mark (see above for the readers).
        unsafe { *self.holder.get() = frame.mark() };
        // Ends the turn when `run` returns or unwinds (after a panic the
        // closure stays callable, as a `#[c_callback]` does).
        let _end = EndTurn(self);
        // SAFETY: this thread holds the turn until `_end` drops, and only
        // the holder of the turn reaches the body.
        Ok(run(unsafe { &mut *self.body.get() }))
    }
}

/// For a call that finds a `Closure::new` turn held under its own
/// thread's mark by the call marked `holder`: true when that call is
/// certainly gone, so the asking call may take the turn over.
///
/// From any depth, when the thread's calls found the holder gone while
/// it was recorded as running, and no other call claimed it since
/// (`Context::claim_gone`). A turn under its mark is still its own: a call
/// that took the turn and has not written its mark yet took it from a call
/// that ended it, or from a gone call it claimed first. (A handler's
/// `siglongjmp` after a call ended its turn would break this: callbacks
/// from signal handlers are unsupported.)
///
/// Otherwise only from the thread's outermost call, by the holder's mark
/// ([`marked_call_is_gone`]): no call of this thread encloses it, so none
/// may have taken the turn without writing its mark yet.
///
/// # Safety
///
/// Called from inside a call on this thread; `holder` is the mark of a
/// call made on the context serving this thread (by a call of this
/// thread, or of a thread that had its context before, which handed it on
/// through the free list).
#[cold]
#[inline(never)]
unsafe fn turn_holder_is_gone(holder: Mark) -> bool {
    let claimed = thread::current().is_some_and(|node| node.value.claim_gone(holder));
    // SAFETY: forwarded caller obligations.
    claimed || unsafe { marked_call_is_gone(holder) }
}

/// Ends a turn of an `Exclusive` body.
struct EndTurn<'a, F>(&'a Exclusive<F>);

impl<F> Drop for EndTurn<'_, F> {
    #[hot_path]
    fn drop(&mut self) {
        // SAFETY: an `EndTurn` is made only by `Exclusive::with` on the
        // thread whose `begin` just returned `Ok`, and dropped once (if
        // the call is abandoned, not at all: see `with`).
        unsafe { self.0.turn.end() };
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
