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
    /// A call abandoned inside the body (a `longjmp` out of C code it
    /// called, or its thread's exit) leaves its turn held and its
    /// reference to the closure taken. A later call under its mark that
    /// finds the call that took the turn certainly gone takes the turn
    /// back and gives up that reference for it ([`turn_holder_is_gone`]):
    /// a call nested in another callback, if the thread's calls found the
    /// abandoned one gone since (the next call after the jump did, where
    /// the jump left the callback it was nested in too, as a Lua error
    /// caught by `pcall` does); else only the thread's outermost call, by the
    /// abandoned call's mark. A call that started on another stack of the
    /// thread (a coroutine) may be suspended inside the body rather than
    /// gone, and keeps the turn.
    ///
    /// In a `fork` child, a turn held by a call of a thread the child does
    /// not have is taken over by the first call that finds it so, which
    /// gives up that call's reference (see `Turn::begin_noting_wait`). A
    /// call that waits for the turn notes so in its context, so that such
    /// a child gives up its reference too ([`WaitNote`]).
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
        // A thread mark is the address of a context, which serves one
        // thread at a time, throughout the call (`Frame::thread_mark`):
        // non-zero, and a multiple of 4 (contexts are 128-byte aligned).
        self.turn.begin_noting_wait(
            frame.thread_mark(),
            // SAFETY: the turn is held under this thread's mark, so
            // `holder` was written by the call that took it, a call on
            // this thread's context: by this thread, or by one whose
            // context it has now through the free list, which orders that
            // thread's accesses before this one's. A write by another
            // thread's later turn came before the turn was taken under
            // this mark again (the turn's Release/Acquire), and that call
            // wrote after it. (A call of this thread that took the turn and
            // has not written its mark yet left the mark of the call it
            // took the turn from: see `turn_holder_is_gone`.)
            || unsafe { turn_holder_is_gone(*self.holder.get()) },
            || {
                // SAFETY: the turn was held by a call that will never end
                // it (a gone call of this thread's, or one of a thread a
                // `fork` left behind), which took a reference (every call
                // of an `FnMut` closure does, before its turn) and will
                // never give it up; this call holds one more, so the count
                // stays above 0. (Here rather than after `begin`: out of
                // the fast path, which then stays small enough for the
                // body to be inlined.)
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
        // Ends the turn when `run` returns or unwinds (a panicking body is
        // caught by the call's boundary; the closure stays callable with
        // whatever state the panic left, as a `#[c_callback]` does).
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
/// it was still recorded as running, and no other call claimed it since
/// (`Context::claim_gone`): this call claims it. The holder was abandoned
/// inside the body, so it never ended the turn, and a turn under its mark
/// is still its own: a call of this thread that took the turn and has not
/// written its mark yet (interrupted there by a signal handler's call)
/// took it from a call that ended it, whose mark is that of a call that
/// returned, or from a gone call it claimed first. (A call abandoned
/// after it ended its turn, by a handler's `siglongjmp`, would break
/// this: callbacks from signal handlers are unsupported.)
///
/// Otherwise only from the thread's outermost call, by the holder's
/// mark ([`marked_call_is_gone`]): no call of this thread encloses it, so
/// none may have taken the turn without writing its mark yet (a signal
/// handler's call interrupting it there is nested in it, and refused).
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
