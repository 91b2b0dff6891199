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
    /// new: nested entries up to this depth then never allocate (a call
    /// from a signal handler that interrupted malloc would deadlock on it).
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, and no callback runs on it yet.
    pub(crate) unsafe fn reserve_nested(&self) {
        // SAFETY: owning thread, no call running (caller obligation).
        unsafe { (*self.nested.get()).reserve(NESTED_RESERVE) };
    }

    /// The cold half of `enter`: `recorded` calls are recorded as running.
    /// Keeps those that may still be running (see [`stack`]) and records
    /// the new call; returns how many it kept, the depth the new call
    /// starts at.
    ///
    /// The new call's anchor gets a nested token first, so a recorded call
    /// whose anchor was at the same address is seen as overwritten. If no
    /// recorded call is live, the new call becomes the outermost one, with
    /// an outermost token, and the hold of the gone outermost call's entry
    /// word ends. The values calls held through their slots' states are
    /// judged by each holder's own mark when they are looked up
    /// (`Locals::get`).
    ///
    /// The calls recorded deeper than the first gone one are dropped with
    /// it. On the thread's own stack they were nested in it and are gone
    /// too; but one that started inside it on another stack (a coroutine's)
    /// may be suspended there and resume. Each dropped call is judged by
    /// its own mark, and if one may still run the context stays with the
    /// thread until it exits, as for the calls a `leave` forgets (see
    /// [`forget_deeper`](Context::forget_deeper)).
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

    /// Ends the hold of the `#[local]` value the outermost call holds
    /// through the entry word, and clears
    /// [`ADVANCED`](super::running::ADVANCED): that call is gone and the
    /// one starting takes its place with the outermost token.
    fn free_entry_hold(&self) {
        self.running
            .set_entry(self.running.entry() & u64::from(DEPTH));
    }

    /// The count of the next nested call's token: the one after the last,
    /// from a new block when the context has none yet (its count is 0) or
    /// used its block up (see `stack::nested_token_block`). Counts only
    /// grow: the block's start becomes the last count. (Only
    /// [`enter_nested`](Context::enter_nested) takes a count for good.)
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
    /// recorded: the ones recorded deeper than it are forgotten. A call
    /// abandoned inside it is gone; but one that started inside it on
    /// another stack of the thread may be suspended there, and resume
    /// after the context is released, on a context then serving another
    /// thread. Unless every forgotten call is certainly gone by its mark,
    /// seen from the returning call (`stack`), the context stays with the
    /// thread until the thread exits: a per-call release keeps it bound
    /// instead (`thread::release`).
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
    /// call that took it) is that of a nested call this context found
    /// certainly gone while it was recorded as running, among the last few
    /// (see [`GoneCalls`](crate::stack::GoneCalls)); forgotten then, so
    /// that only one call takes over what it held. Unlike
    /// [`holder_is_gone`](Context::holder_is_gone) it holds from any
    /// depth: a nested token names one call in the process, which never
    /// returned, so a turn that keeps its mark was not taken since (a call
    /// that takes a turn has ended it, or keeps it under its own mark).
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
