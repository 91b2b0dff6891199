//! The cold paths of a call that starts or returns while other calls are
//! recorded as running: nested tokens, dropping the recorded calls whose
//! frames are gone, and remembering the nested ones among them for the
//! `Closure::new` turns they may have taken.

use super::Context;
use super::running::DEPTH;
use crate::stack::{self, Anchor, Mark};

/// The bit that tells a nested call's token from an outermost one's: the
/// two counts stay far below it.
pub(super) const NESTED_TOKEN: u64 = 1 << 63;

/// Nested calls recorded without allocating.
const NESTED_RESERVE: usize = 16;

impl Context {
    /// Makes room for the marks of nested calls, once, when the context is
    /// new: a signal handler's call that interrupted malloc must not
    /// allocate.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, and no callback runs on it yet.
    pub(crate) unsafe fn reserve_nested(&self) {
        // SAFETY: owning thread, no call running (caller obligation).
        unsafe { (*self.nested.get()).reserve(NESTED_RESERVE) };
    }

    /// The cold half of `enter`, with `recorded` calls recorded as running:
    /// keeps those that may still run (see [`stack`]), records the new
    /// call, and returns how many it kept, the depth the new call starts at.
    ///
    /// The new anchor gets a nested token first, so a recorded call whose
    /// anchor was at the same address reads as overwritten. If no recorded
    /// call is live, the new one becomes the outermost. The calls recorded
    /// deeper than the first gone one are dropped with it, each judged by
    /// its mark as in [`forget_deeper`](Context::forget_deeper).
    ///
    /// # Safety
    ///
    /// As for `enter`.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn enter_nested(&self, recorded: u32, anchor: &Anchor) -> u32 {
        let mark = anchor.mark(NESTED_TOKEN | self.next_nested_count());
        // SAFETY: owning thread (caller obligation); no user code runs
        // while this borrow lives.
        let nested = unsafe { &mut *self.nested.get() };
        nested.truncate(recorded as usize - 1);
        let recorded_marks = || core::iter::once(self.outer_mark()).chain(nested.iter().copied());
        let live = stack::live_calls(recorded_marks(), mark, &self.stack);
        for dropped in recorded_marks().skip(live as usize) {
            if dropped.is_gone(mark, &self.stack) {
                self.remember_gone(dropped);
            } else {
                self.forgotten_may_resume.set(true);
            }
        }
        if live == 0 {
            // Every recorded call is gone, the outermost one too.
            self.advance();
            self.mark_outermost(anchor);
        } else {
            self.nested_calls
                .set(self.nested_calls.get().wrapping_add(1));
            nested.truncate(live as usize - 1);
            nested.push(mark);
            // The outermost call is live, and this one may be abandoned
            // with holds that name it.
            // SAFETY: owning thread (caller obligation), and the outermost
            // call runs (`live` > 0).
            unsafe { self.advance_past_running() };
        }
        if live == 0 {
            self.free_entry_hold();
        }
        live
    }

    /// Ends the gone outermost call's entry-word hold and clears
    /// [`ADVANCED`](super::running::ADVANCED): the starting call takes its
    /// place.
    fn free_entry_hold(&self) {
        self.running
            .set_entry(self.running.entry() & u64::from(DEPTH));
    }

    /// The count of the next nested call's token: the one after the last,
    /// or from a new block (`stack::nested_token_block`) when the context
    /// has none or used its block up.
    fn next_nested_count(&self) -> u64 {
        let last = self.nested_calls.get();
        let next = last.wrapping_add(1);
        if last != 0 && next % stack::NESTED_TOKEN_BLOCK != 0 {
            return next;
        }
        let start = stack::nested_token_block();
        self.nested_calls.set(start);
        start + 1
    }

    /// The call that entered at `start` returns while `depth` calls are
    /// recorded: the deeper ones are forgotten. One may be suspended on
    /// another stack of the thread, so unless each is certainly gone by its
    /// mark, the context stays with the thread until it exits.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, in the returning call, which
    /// entered at `start`; `depth` (more than `start + 1`) is the depth
    /// recorded.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn forget_deeper(&self, start: u32, depth: u32) {
        // SAFETY: owning thread (caller obligation); no user code runs
        // while this borrow lives.
        let nested = unsafe { &*self.nested.get() };
        // `nested[d - 2]` is the mark of the call recorded at depth `d`.
        let returning = match start {
            0 => Some(self.outer_mark()),
            _ => nested.get(start as usize - 1).copied(),
        };
        let gone = match (returning, nested.get(start as usize..depth as usize - 1)) {
            (Some(returning), Some(forgotten)) => forgotten.iter().fold(true, |all, &mark| {
                let gone = mark.is_gone(returning, &self.stack);
                if gone {
                    self.remember_gone(mark);
                }
                all && gone
            }),
            // Not recorded as the entries say: keep the context, on the
            // safe side.
            _ => false,
        };
        if !gone {
            self.forgotten_may_resume.set(true);
        }
    }

    /// True when `holder` (the mark a `Closure::new` turn keeps of the
    /// call that took it) is one of the last few nested calls this context
    /// found gone ([`GoneCalls`](crate::stack::GoneCalls)); forgotten then,
    /// so only one call takes over what it held. Valid at any depth, unlike
    /// [`holder_is_gone`](Context::holder_is_gone): a nested token names
    /// one call in the process.
    pub(crate) fn claim_gone(&self, holder: Mark) -> bool {
        holder.token() & NESTED_TOKEN != 0 && self.gone.claim(holder.token())
    }

    /// Remembers `mark`, a recorded call found certainly gone, if it is a
    /// nested one (see [`claim_gone`](Context::claim_gone)).
    fn remember_gone(&self, mark: Mark) {
        if mark.token() & NESTED_TOKEN != 0 {
            self.gone.remember(mark.token());
        }
    }
}
