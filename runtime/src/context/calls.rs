//! Recording the callbacks that run on a context's owner: the outermost
//! call's fast entry and leave, `enter` and `leave` at any depth, and the
//! outermost token.

use super::Context;
use super::running::{ADVANCED, DEPTH};
use crate::local::holding;
use crate::stack::{Anchor, Mark};

impl Context {
    /// The bound fast path: starts the call with `anchor` if the owner is
    /// idle (it ends with [`leave_outermost`](Context::leave_outermost)); else
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

    /// True when no call is recorded as running on the owner.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    #[hot_path]
    pub(crate) unsafe fn is_idle(&self) -> bool {
        // The whole word: the held index is 0 whenever the depth is.
        self.running.entry() == 0
    }

    /// [`enter_outermost`](Context::enter_outermost) on an idle context.
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

    /// [`enter_idle`](Context::enter_idle) for a call that holds a `#[local]`
    /// value until it leaves: `entry` is [`holding`] its index, so the depth
    /// and the hold are one store.
    ///
    /// # Safety
    ///
    /// As for `enter_idle`; `entry` is `holding(0)` or `holding` the index of
    /// a free value of this context.
    #[hot_path]
    pub(crate) unsafe fn enter_idle_holding(&self, anchor: &Anchor, entry: u64) {
        debug_assert_eq!(self.running.entry(), 0);
        debug_assert_eq!(entry as u32, 1, "an outermost call's entry word");
        self.mark_outermost(anchor);
        self.running.set_entry(entry);
    }

    /// Records `anchor`'s call as the outermost one, with the current token.
    #[hot_path]
    pub(super) fn mark_outermost(&self, anchor: &Anchor) {
        let token = self.outer_token.get();
        self.running.set_outer(anchor.mark(token).address());
    }

    /// Gives later outermost calls a new token; not while a running call's
    /// mark holds it, unless
    /// [`advance_past_running`](Context::advance_past_running) kept it aside.
    pub(super) fn advance(&self) {
        self.outer_token.set(self.outer_token.get().wrapping_add(1));
    }

    /// Something inside the running outermost call (a nested call, a
    /// `#[local]` lookup) may leave its mark behind: later calls get a new
    /// token now, the running one's kept in
    /// [`running_token`](Context::running_token) with [`ADVANCED`] set.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, inside a running outermost call (at
    /// depth 0 the flag would give the next call a token not its own).
    pub(super) unsafe fn advance_past_running(&self) {
        let entry = self.running.entry();
        debug_assert_ne!(entry as u32 & DEPTH, 0, "inside a call");
        if entry & u64::from(ADVANCED) == 0 {
            self.running_token.set(self.outer_token.get());
            self.running.set_entry(entry | u64::from(ADVANCED));
            self.advance();
        }
    }

    fn running_outer_token(&self) -> u64 {
        if self.running.entry() & u64::from(ADVANCED) == 0 {
            self.outer_token.get()
        } else {
            self.running_token.get()
        }
    }

    pub(super) fn outer_mark(&self) -> Mark {
        Mark::new(self.running.outer(), self.running_outer_token())
    }

    /// The call [`enter_outermost`](Context::enter_outermost) started returns:
    /// never a release (a per-call attachment's call entered through
    /// [`enter`](Context::enter)), nothing to check.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - The returning call entered with `enter_outermost` and has not left.
    #[hot_path]
    pub(crate) unsafe fn leave_outermost(&self) {
        self.running.set_idle();
    }

    /// A callback starts on the owning thread, with `anchor` in its frame;
    /// returns the depth it starts at. A nested call takes the cold path.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - `anchor` is in the starting call's frame and lives until it leaves.
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
        // The held index stays: an outer call's, or 0.
        self.set_depth(start + 1);
        start
    }

    #[hot_path]
    fn set_depth(&self, depth: u32) {
        self.running
            .set_entry(self.running.entry() & !u64::from(DEPTH) | u64::from(depth));
    }

    /// A callback that entered at depth `start` returns; true when it was a
    /// per-call attachment's outermost call, to be released now.
    ///
    /// Restoring `start` forgets the calls recorded deeper: abandoned ones, or
    /// ones suspended on another stack ([`forget_deeper`](Context::forget_deeper)).
    /// A call that finds fewer calls recorded than its depth was itself
    /// forgotten so (coroutines end in any order), and leaves the record
    /// alone. The outermost call advances the token: a margin, free here.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - `start` is what the returning call's `enter` gave, and it has not
    ///   left.
    #[hot_path]
    pub(crate) unsafe fn leave(&self, start: u32) -> bool {
        // SAFETY: owning thread (caller obligation).
        let depth = unsafe { self.depth() };
        if depth <= start {
            return false;
        }
        if depth > start + 1 {
            // SAFETY: owner; the call entered at `start`, `depth` calls recorded.
            unsafe { self.forget_deeper(start, depth) };
        }
        if start == 0 {
            // The held index is 0 already: a call entered through `enter` holds
            // nothing through the word.
            self.running
                .set_entry(self.running.entry() & !u64::from(u32::MAX));
            self.advance();
        } else {
            // Keeps the held index and `ADVANCED`.
            self.set_depth(start);
        }
        // `&`, not `&&`: no branch for the short-circuit on the common path.
        self.per_call.get() & (start == 0)
    }
}
