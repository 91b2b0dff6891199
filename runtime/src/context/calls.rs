//! Recording the callbacks that run on a context's owner: the outermost
//! call's fast entry and leave, `enter` and `leave` for any depth, and the
//! outermost token that tells an outermost call's mark from a later one's.

use super::Context;
use super::running::{ADVANCED, DEPTH};
use crate::local::holding;
use crate::stack::{Anchor, Mark};

impl Context {
    /// The fast path of a bound thread: a callback with `anchor` in its
    /// frame starts on the owner if no call is recorded as running there,
    /// and ends with [`leave_outermost`](Context::leave_outermost); else
    /// false, and the caller takes [`enter`](Context::enter).
    ///
    /// # Safety
    ///
    /// As for [`enter`](Context::enter).
    #[hot_path]
    pub(crate) unsafe fn enter_outermost(&self, anchor: &Anchor) -> bool {
        // SAFETY: owning thread (caller obligation).
        if !unsafe { self.is_idle() } {
            return false;
        }
        // SAFETY: idle (just checked); forwarded caller obligations.
        unsafe { self.enter_idle(anchor) };
        true
    }

    /// True when no call is recorded as running on the owner: the next
    /// [`enter_outermost`](Context::enter_outermost) succeeds.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    #[hot_path]
    pub(crate) unsafe fn is_idle(&self) -> bool {
        // The whole word: the held index is 0 whenever the depth is.
        self.running.entry() == 0
    }

    /// [`enter_outermost`](Context::enter_outermost) on a context the
    /// caller knows is idle.
    ///
    /// # Safety
    ///
    /// As for `enter_outermost`, and [`is_idle`](Context::is_idle) is
    /// true.
    #[hot_path]
    pub(crate) unsafe fn enter_idle(&self, anchor: &Anchor) {
        // SAFETY: forwarded caller obligations; index 0 holds nothing.
        unsafe { self.enter_idle_holding(anchor, holding(0)) };
    }

    /// [`enter_idle`](Context::enter_idle) for a call that holds a
    /// `#[local]` value until it leaves: `entry` is [`holding`] its index
    /// (from `Locals::get_ready`), so the depth and the hold are one store.
    ///
    /// # Safety
    ///
    /// As for `enter_idle`; `entry` is `holding(0)` or `holding` the index
    /// of a value of this context that is free.
    #[hot_path]
    pub(crate) unsafe fn enter_idle_holding(&self, anchor: &Anchor, entry: u64) {
        debug_assert_eq!(self.running.entry(), 0);
        debug_assert_eq!(entry as u32, 1, "an outermost call's entry word");
        self.mark_outermost(anchor);
        self.running.set_entry(entry);
    }

    /// Records the call whose anchor is `anchor` as the outermost one, with
    /// the current outermost token: two stores the compiler may drop (see
    /// [`Running`](super::running::Running)).
    #[hot_path]
    pub(super) fn mark_outermost(&self, anchor: &Anchor) {
        let token = self.outer_token.get();
        self.running.set_outer(anchor.mark(token).address());
    }

    /// Gives the outermost calls from now on a token no earlier call had.
    /// Not while a running outermost call's mark holds the token
    /// ([`outer_mark`](Context::outer_mark)), unless
    /// [`advance_past_running`](Context::advance_past_running) kept it
    /// aside.
    pub(super) fn advance(&self) {
        self.outer_token.set(self.outer_token.get().wrapping_add(1));
    }

    /// Something inside the running outermost call (a nested call, a
    /// `#[local]` lookup) may leave a mark behind that outlives it: the
    /// calls after it get a new token now, the running one's kept in
    /// [`running_token`](Context::running_token) with [`ADVANCED`] set.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, inside a running outermost call
    /// (at depth 0 the flag would give the next call a token not its own).
    pub(super) unsafe fn advance_past_running(&self) {
        let entry = self.running.entry();
        debug_assert_ne!(entry as u32 & DEPTH, 0, "inside a call");
        if entry & u64::from(ADVANCED) == 0 {
            self.running_token.set(self.outer_token.get());
            self.running.set_entry(entry | u64::from(ADVANCED));
            self.advance();
        }
    }

    /// The token of the outermost call recorded as running.
    fn running_outer_token(&self) -> u64 {
        if self.running.entry() & u64::from(ADVANCED) == 0 {
            self.outer_token.get()
        } else {
            self.running_token.get()
        }
    }

    /// The mark of the outermost call recorded as running.
    pub(super) fn outer_mark(&self) -> Mark {
        Mark::new(self.running.outer(), self.running_outer_token())
    }

    /// The call that [`enter_outermost`](Context::enter_outermost) started
    /// returns. Never a release: a per-call context's attaching call
    /// entered through [`enter`](Context::enter). Nothing to check: what
    /// an abandoned nested call left names a token that advanced
    /// ([`advance_past_running`](Context::advance_past_running)).
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - The returning call entered with `enter_outermost` and has not
    ///   left yet.
    #[hot_path]
    pub(crate) unsafe fn leave_outermost(&self) {
        // Depth 0, no `ADVANCED`, and the call's hold ends.
        self.running.set_idle();
    }

    /// A callback starts on the owning thread, with `anchor` in its frame;
    /// returns the depth it starts at, which its `leave` restores.
    ///
    /// A nested call takes the cold path, which first drops the recorded
    /// calls whose frames are provably gone.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - `anchor` is in the frame of the call that is starting and lives
    ///   until that call leaves.
    #[hot_path]
    pub(crate) unsafe fn enter(&self, anchor: &Anchor) -> u32 {
        // SAFETY: owning thread (caller obligation).
        let recorded = unsafe { self.depth() };
        let start = if recorded == 0 {
            // A token of its own: the same margin as `leave`'s.
            self.advance();
            self.mark_outermost(anchor);
            0
        } else {
            // SAFETY: forwarded caller obligations.
            unsafe { self.enter_nested(recorded, anchor) }
        };
        // The held index stays: an outer call's, or 0 (when `recorded` is
        // 0, or `enter_nested` found every recorded call gone).
        self.set_depth(start + 1);
        start
    }

    /// Sets the depth, keeping the held index and [`ADVANCED`].
    #[hot_path]
    fn set_depth(&self, depth: u32) {
        self.running
            .set_entry(self.running.entry() & !u64::from(DEPTH) | u64::from(depth));
    }

    /// A callback that entered at depth `start` returns; true when it was
    /// the outermost one of a per-call attachment, to be released now.
    ///
    /// Restoring `start` rather than decrementing forgets the calls
    /// recorded deeper: abandoned ones, or ones suspended on another stack
    /// of the thread ([`forget_deeper`](Context::forget_deeper)); what they
    /// hold stays held until found gone (`Locals::get`). A call that finds
    /// fewer calls recorded than its depth was itself forgotten so
    /// (coroutines end in any order), and leaves the record alone.
    ///
    /// The outermost call advances the token as it leaves: a margin the
    /// token rules do not need, free off the fast path.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - `start` is what the `enter` of the call that is returning gave,
    ///   and that call has not left yet.
    #[hot_path]
    pub(crate) unsafe fn leave(&self, start: u32) -> bool {
        // SAFETY: owning thread (caller obligation).
        let depth = unsafe { self.depth() };
        if depth <= start {
            return false;
        }
        if depth > start + 1 {
            // SAFETY: owning thread; the returning call entered at `start`
            // and `depth` calls are recorded (caller obligations).
            unsafe { self.forget_deeper(start, depth) };
        }
        if start == 0 {
            // Depth 0, no `ADVANCED`; the held index is 0 already (a call
            // that entered through `enter` holds nothing through the word).
            self.running
                .set_entry(self.running.entry() & !u64::from(u32::MAX));
            self.advance();
        } else {
            // Keeps the held index (an outer call's) and `ADVANCED`
            // for the outermost call.
            self.set_depth(start);
        }
        // `&`, not `&&`: no branch for the short-circuit on the common path.
        self.per_call.get() & (start == 0)
    }
}
