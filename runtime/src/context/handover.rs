//! A context changing hands: its owner gives it up, exits, or is missing
//! from a `fork` child; the next owner's calls tell the old calls over by
//! their tokens.

use super::Context;
use super::nested::NESTED_TOKEN;
use crate::stack::Mark;

impl Context {
    /// True when the call marked `holder` (`Frame::mark`) certainly has no
    /// frame left, seen from the owner's outermost call: its token is from
    /// before the context changed hands, or its mark tells.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, inside its outermost running call;
    /// `holder` is the mark of a call made on this context.
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

    /// True when a forgotten call may resume on another stack.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn forgotten_may_resume(&self) -> bool {
        self.forgotten_may_resume.get()
    }

    /// True when the owner may be inside a call on the context, or about to
    /// enter or just out of one, and hold a `Closure::new` turn under its
    /// mark.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, or the only thread of a `fork`
    /// child.
    #[cfg(unix)]
    pub(crate) unsafe fn may_be_in_a_call(&self) -> bool {
        // SAFETY: forwarded caller obligation.
        !unsafe { self.is_idle() } || self.forgotten_may_resume.get() || self.held.turn_noted()
    }

    /// The owner gives the context up to the free list: records its calls as
    /// over for the next owner (who may then take back their turns), unless a
    /// forgotten call may still resume.
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
            // Abandoned calls' recorded references leak.
            self.held.forget();
        }
    }

    /// The owning thread exits, with none of its frames left: forgets every
    /// call and frees every `#[local]` hold. Returns what the hazard word
    /// announced, whose hold the caller ends.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, in the thread's key destructor: no
    /// `LocalRef` can be used again.
    #[must_use]
    pub(crate) unsafe fn forget_all_calls(&self) -> usize {
        // SAFETY: owning thread (caller obligation).
        unsafe {
            (*self.nested.get()).clear();
            self.locals.free_every_hold();
        }
        self.running.set_entry(0);
        self.all_calls_over();
        // Abandoned calls' recorded references leak.
        self.held.forget();
        // SAFETY: owning thread; the calls are over (caller obligation).
        unsafe { self.hazard.withdraw() }
    }

    /// Resets a context whose thread this `fork` child lacks; returns what its
    /// hazard word announced, whose hold the caller ends.
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
        // Counted only if attached: the parent may have forked between a pop
        // and its bind's count, or a release's count and its push.
        if self.binds.get() > self.releases.get() {
            self.releases.bump();
        }
        self.all_calls_over();
        // SAFETY: the only thread stands in for the gone owner (caller
        // obligation).
        unsafe { self.hazard.withdraw() }
    }

    /// Every call made on the context is over: records their tokens
    /// ([`calls_when_gone`](Context::calls_when_gone)) and advances past them.
    fn all_calls_over(&self) {
        self.forgotten_may_resume.set(false);
        self.calls_when_gone
            .set((self.outer_token.get(), self.nested_calls.get()));
        self.advance();
    }
}
