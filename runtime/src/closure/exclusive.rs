//! The body of a `Closure::new` closure: an `FnMut` whose calls take
//! turns ([`Exclusive`]). A call from another thread waits; one from the
//! thread that holds the turn fails with the fallback. A turn an abandoned
//! call left is taken back once that call is certainly gone
//! ([`turn_holder_is_gone`]).

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
    /// Whose turn it is (threads named by [`Frame::thread_mark`]).
    turn: Turn,
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
            turn: Turn::new(),
            holder: UnsafeCell::new(Mark::new(0, 0)),
            body: UnsafeCell::new(body),
        }
    }

    /// Runs `run` on the body once no other thread is in it; an error if this
    /// thread already is (a re-entrant call through C). A turn an abandoned
    /// call left, or (in a `fork` child) a missing thread's, is taken over,
    /// and that call's reference given up; a waiting call notes its wait in
    /// its context ([`WaitNote`]) for such a child.
    ///
    /// # Safety
    ///
    /// The call holds a reference to the closure of `header`, whose body this
    /// is.
    #[hot_path]
    pub(super) unsafe fn with<O>(
        &self,
        frame: &Frame,
        header: NonNull<Header>,
        run: impl FnOnce(&mut F) -> O,
    ) -> Result<O, Failure> {
        // Thread marks are non-zero multiples of 4, as `Turn` needs (contexts
        // are 128-byte aligned).
        self.turn.begin_noting_wait(
            frame.thread_mark(),
            // SAFETY: the turn is held under this thread's mark, so `holder` was
            // written on this thread's context, by it or an earlier owner (ordered
            // by the free list); other threads' writes by the turn's
            // Release/Acquire. (A holder that has not written its mark yet: see
            // `turn_holder_is_gone`.)
            || unsafe { turn_holder_is_gone(*self.holder.get()) },
            || {
                // SAFETY: the holder will never end the turn; it took a reference
                // (every `FnMut` call does) it will never give up, and this call holds
                // one more, so the count stays above 0.
                unsafe { release(header) };
            },
            // SAFETY: this call holds a reference (caller obligation),
            // which the note names until the call has the turn.
            |turn| unsafe { WaitNote::new(header, turn) },
            reentered,
        )?;
        // SAFETY: this thread holds the turn; only the holder writes the mark.
        unsafe { *self.holder.get() = frame.mark() };
        // Ends the turn when `run` returns or unwinds.
        let _end = EndTurn(self);
        // SAFETY: this thread holds the turn until `_end` drops; only the
        // holder reaches the body.
        Ok(run(unsafe { &mut *self.body.get() }))
    }
}

/// True when the call marked `holder`, holding a `Closure::new` turn under
/// this thread's mark, is certainly gone, so the turn may be taken over:
///
/// - from any depth, when the thread's calls found it gone while recorded
///   and nobody claimed it since (`Context::claim_gone`): a call that took
///   the turn and has not written its mark yet took it from a call that
///   ended it or that it claimed (a handler's `siglongjmp` after a turn's
///   end would break this: callbacks from signal handlers are
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

struct EndTurn<'a, F>(&'a Exclusive<F>);

impl<F> Drop for EndTurn<'_, F> {
    #[hot_path]
    fn drop(&mut self) {
        // SAFETY: made only by `with` once its `begin` returned `Ok`, on that
        // thread, and dropped once (or never, if the call is abandoned).
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
