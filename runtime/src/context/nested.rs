//! The cold paths of a call that starts or returns while other calls are
//! recorded as running: nested tokens, and dropping the recorded calls
//! whose frames are gone.

use super::Context;
use super::running::DEPTH;
use crate::stack::{self, Anchor, Mark};

/// The bit of a nested call's token: both counts stay far below it.
pub(super) const NESTED_TOKEN: u64 = 1 << 63;

/// Nested calls recorded without allocating.
const NESTED_RESERVE: usize = 16;

impl Context {
    /// Makes room for the marks of nested calls, once: a signal handler's call
    /// that interrupted malloc must not allocate.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, and no callback runs on it yet.
    pub(crate) unsafe fn reserve_nested(&self) {
        // SAFETY: owner, no call running (caller obligation).
        unsafe { (*self.nested.get()).reserve(NESTED_RESERVE) };
    }

    /// The cold half of `enter`: of the `recorded` calls, keeps those before
    /// the first that is gone (see [`stack`]), records the new call, and
    /// returns the depth it starts at. The new anchor gets its token first, so
    /// a gone call whose anchor was there reads as overwritten.
    ///
    /// # Safety
    ///
    /// As for `enter`.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn enter_nested(&self, recorded: u32, anchor: &Anchor) -> u32 {
        let mark = anchor.mark(NESTED_TOKEN | self.next_nested_count());
        // SAFETY: owner (caller obligation); no user code runs meanwhile.
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
            // Every recorded call is gone: this one is the outermost.
            self.advance();
            self.mark_outermost(anchor);
        } else {
            self.nested_calls
                .set(self.nested_calls.get().wrapping_add(1));
            nested.truncate(live as usize - 1);
            nested.push(mark);
            // This call may be abandoned with holds that name it.
            // SAFETY: owner (caller obligation), inside the live outermost call.
            unsafe { self.advance_past_running() };
        }
        if live == 0 {
            self.free_entry_hold();
        }
        live
    }

    /// Ends the gone outermost call's entry-word hold and clears
    /// [`ADVANCED`](super::running::ADVANCED).
    fn free_entry_hold(&self) {
        self.running
            .set_entry(self.running.entry() & u64::from(DEPTH));
    }

    /// The next nested call's count: the one after the last, or the start of
    /// a new block (`stack::nested_token_block`).
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
    /// recorded: the deeper ones are forgotten, and unless each is certainly
    /// gone by its mark, the context stays with the thread until it exits.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, in the returning call, which entered
    /// at `start`; `depth` (above `start + 1`) is the depth recorded.
    #[cold]
    #[inline(never)]
    pub(super) unsafe fn forget_deeper(&self, start: u32, depth: u32) {
        // SAFETY: owner (caller obligation); no user code runs meanwhile.
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
            // Not recorded as expected: keep the context, to be safe.
            _ => false,
        };
        if !gone {
            self.forgotten_may_resume.set(true);
        }
    }

    /// True when `holder` (a `Closure::new` turn's mark) is one of the nested
    /// calls this context found gone ([`GoneCalls`](crate::stack::GoneCalls));
    /// forgotten then, so one call takes over. Valid at any depth: a nested
    /// token names one call in the process.
    pub(crate) fn claim_gone(&self, holder: Mark) -> bool {
        holder.token() & NESTED_TOKEN != 0 && self.gone.claim(holder.token())
    }

    /// Remembers `mark`, found gone, if it is a nested call's.
    fn remember_gone(&self, mark: Mark) {
        if mark.token() & NESTED_TOKEN != 0 {
            self.gone.remember(mark.token());
        }
    }
}
