//! A context changing hands: its owner gives it up, exits, or is missing
//! from a `fork` child. The calls made on it until then are over, and the
//! next owner's calls tell them so by their tokens.

use super::Context;
use super::nested::NESTED_TOKEN;
use crate::stack::Mark;

impl Context {
    /// True when the call marked `holder` (see `Frame::mark`) certainly has
    /// no frame left, seen from the owner's outermost running call: its
    /// token is from before the context last changed hands
    /// ([`calls_when_gone`](Context::calls_when_gone)), or its mark tells
    /// (`Mark::holder_is_gone`).
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, inside its outermost running
    /// call; `holder` is the mark of a call made on this context.
    #[cold]
    pub(crate) unsafe fn holder_is_gone(&self, holder: Mark) -> bool {
        let token = holder.token();
        let (calls, nested) = self.calls_when_gone.get();
        let before = if token & NESTED_TOKEN == 0 {
            token <= calls
        } else {
            token & !NESTED_TOKEN <= nested
        };
        before || holder.holder_is_gone(self.outer_mark(), &self.stack)
    }

    /// True when a call that a `leave` forgot may be suspended on another
    /// stack and resume (see [`forget_deeper`](Context::forget_deeper)).
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn forgotten_may_resume(&self) -> bool {
        self.forgotten_may_resume.get()
    }

    /// True when the owner may be inside a call on the context (and so hold
    /// a `Closure::new` turn under its mark): a call is recorded as
    /// running, or a forgotten one may resume.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, or the only thread of a `fork`
    /// child.
    #[cfg(unix)]
    pub(crate) unsafe fn may_be_in_a_call(&self) -> bool {
        // SAFETY: forwarded caller obligation.
        !unsafe { self.is_idle() } || self.forgotten_may_resume.get()
    }

    /// The owning thread gives the context up, back to the free list:
    /// records its calls as over for the next owner, unless a call it
    /// forgot may still resume, and clears
    /// [`forgotten_may_resume`](Context::forgotten_may_resume). So the next
    /// owner's calls can take back a turn one of them left behind.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, giving it up: no call runs on it.
    pub(crate) unsafe fn give_up(&self) {
        if self.forgotten_may_resume.get() {
            self.forgotten_may_resume.set(false);
            self.advance();
        } else {
            self.all_calls_over();
            // What abandoned calls recorded: their references leak.
            self.held.forget();
        }
    }

    /// The owning thread is exiting and none of its frames remain: forget
    /// every call recorded as running and free every `#[local]` value.
    /// Returns what the hazard word announced (see
    /// [`Hazard::withdraw`](crate::sync::Hazard::withdraw)): an abandoned
    /// call's, whose hold the caller ends.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, running the thread's key
    /// destructor: the thread's callbacks have all returned or been
    /// abandoned, so no `LocalRef` can be used again.
    #[must_use]
    pub(crate) unsafe fn forget_all_calls(&self) -> usize {
        // SAFETY: owning thread (caller obligation).
        unsafe {
            (*self.nested.get()).clear();
            self.locals.free_every_hold();
        }
        self.running.set_entry(0);
        self.all_calls_over();
        // What abandoned calls recorded: their references leak.
        self.held.forget();
        // SAFETY: owning thread; the calls are over (caller obligation).
        unsafe { self.hazard.withdraw() }
    }

    /// Resets a context whose thread does not exist in this `fork` child.
    /// Returns what its hazard word announced (see
    /// [`Hazard::withdraw`](crate::sync::Hazard::withdraw)): a call of
    /// that thread that will never return, whose hold the caller ends.
    ///
    /// # Safety
    ///
    /// The caller is the only thread of a `fork` child and the context is
    /// not serving it.
    #[cfg(unix)]
    #[must_use]
    pub(crate) unsafe fn reset_orphan(&self) -> usize {
        self.running.set_entry(0);
        // SAFETY: no other thread can reach the context (caller obligation).
        unsafe { (*self.nested.get()).clear() };
        self.per_call.set(false);
        self.after_exit.set(false);
        self.releasing.set(0);
        // SAFETY: forwarded caller obligation.
        unsafe { self.locals.abandon() };
        // Count the release only if the context was attached: a thread may
        // have been between popping and counting its bind, or between
        // counting its release and pushing, when the parent forked.
        if self.binds.get() > self.releases.get() {
            self.releases.bump();
        }
        self.all_calls_over();
        // SAFETY: the context's thread is gone; this thread, the only one,
        // stands in for it (caller obligation).
        unsafe { self.hazard.withdraw() }
    }

    /// Every call made on the context is over, wherever it ran: records
    /// their last tokens ([`calls_when_gone`](Context::calls_when_gone)),
    /// advances the outermost token past them, and clears
    /// [`forgotten_may_resume`](Context::forgotten_may_resume).
    fn all_calls_over(&self) {
        self.forgotten_may_resume.set(false);
        self.calls_when_gone
            .set((self.outer_token.get(), self.nested_calls.get()));
        // The next outermost call's token is above the recorded one.
        self.advance();
    }
}
