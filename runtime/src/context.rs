//! Thread contexts: the per-thread runtime state, pooled and recycled.

use core::cell::{Cell, UnsafeCell};

use crate::failure::Failure;
use crate::freelist::{FreeList, Link, Node, Pooled};
use crate::local::{Holder, Local, LocalKey, LocalRef, Locals, held_in, holding};
use crate::stack::{self, Anchor, GoneCalls, Mark, ThreadStack};
use crate::sync::{AtomicU64, Hazard, HeldRefs, Ordering};

/// Every context ever created; freed only when the library is unloaded
/// with no thread bound (`hooks`).
pub(crate) static CONTEXTS: FreeList<Context> = FreeList::new();

/// A per-thread counter: written only by the context's owner (a plain
/// load + store, no read-modify-write, no shared cache line), read by
/// `stats()` from any thread.
pub(crate) struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    /// Counts one more; returns the count before.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn bump(&self) -> u64 {
        // Relaxed: a statistic with a single writer (the owning thread), so
        // load + store cannot lose an update; readers only need atomicity.
        let before = self.0.load(Ordering::Relaxed);
        self.0.store(before.wrapping_add(1), Ordering::Relaxed);
        before
    }

    /// The count so far.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        // Relaxed: another thread reads a statistic, which needs only
        // atomicity; the owner (for the tokens of its calls) reads its own
        // last store.
        self.0.load(Ordering::Relaxed)
    }
}

/// The runtime state of one bound thread.
///
/// The `Cell` fields and the locals belong to the thread the context
/// currently serves, its *owner*: the methods that touch them are `unsafe`,
/// and their callers vouch for running on the owner. A context changes
/// owner only through the free list, whose Release/Acquire pair orders the
/// previous owner's accesses before the next owner's.
///
/// Each lives in a [`Node`] of [`CONTEXTS`], aligned to 128 bytes (two
/// cache lines, the unit the adjacent-line prefetcher pulls in), so the
/// counters two threads write on their fast paths never share a line: no
/// false sharing between bound threads.
#[repr(C)]
pub(crate) struct Context {
    // The fields a bound call touches come first (`repr(C)`), within the
    // node's first cache line (asserted below): one-byte displacements, one
    // line.
    /// What runs on the owning thread: the entry word and where the
    /// outermost call's anchor is (see [`Running`]).
    running: Running,
    /// The token of the outermost calls (see [`stack`]): the same for
    /// calls that follow one another and leave nothing behind, advanced
    /// ([`advance`](Context::advance)) wherever a call may have. The fast
    /// path only reads it: a count incremented by every call would be a
    /// read-modify-write of memory that each call's waits for the last
    /// one's (0.2–0.4 ns per call on an Intel CPU; see the guide's Performance method).
    outer_token: Cell<u64>,
    /// The count of the last nested call's token (recorded at depth 1 or
    /// more; the token is the count with [`NESTED_TOKEN`] set), or the
    /// start of the block of counts it takes them from (see
    /// [`next_nested_count`](Context::next_nested_count)).
    nested_calls: Cell<u64>,
    /// The `#[local]` values: the fast path of a callback with one
    /// `#[local]` parameter reads their table, in the first cache line with
    /// the fields above.
    pub(crate) locals: Locals,
    /// Release the context when the outermost call returns.
    per_call: Cell<bool>,
    /// Serving a thread whose bound context was already released at exit,
    /// or one without an exit hook (no pthread key was left): per call,
    /// never cached.
    after_exit: Cell<bool>,
    /// A call that a `leave` or an `enter` forgot may be suspended on
    /// another stack of the thread and resume there (see
    /// [`leave`](Context::leave) and [`enter`](Context::enter)): the
    /// context must stay with the thread until it exits. Reset when the
    /// thread exits, or the context goes back to the free list anyway.
    forgotten_may_resume: Cell<bool>,
    /// The free list's link, in the second cache line, which the thread
    /// that pops the context writes when it binds: a pop reads it from a
    /// line the new owner fetches anyway.
    link: Link,
    // A per-call attach and its release, and a thread's first call, touch
    // the fields above and these, in the second cache line.
    pub(crate) binds: Counter,
    pub(crate) releases: Counter,
    /// [`outer_token`](Context::outer_token) and
    /// [`nested_calls`](Context::nested_calls) when the last thread the
    /// context served gave it up with its calls on it all over, wherever
    /// they ran (it exited, is not in this `fork` child, or handed the
    /// context on after judging every call it forgot gone): a call whose
    /// token is at most these is over (see [`Context::holder_is_gone`]).
    calls_when_gone: Cell<(u64, u64)>,
    /// The `Closure::concurrent` a running call of the owner announced
    /// (see `closure`), or 0; a thread writes only its own, so calls from
    /// many threads at once share no line.
    pub(crate) hazard: Hazard,
    /// The owning thread's stack bounds, for telling abandoned calls.
    stack: ThreadStack,
    /// The marks of the nested running calls: `nested[d - 1]` is the mark
    /// of the call that entered at depth `d`. Only the cold nested entry
    /// touches it.
    nested: UnsafeCell<Vec<Mark>>,
    /// The running outermost call's token while [`ADVANCED`] is set in
    /// the entry word: the outermost token has moved past it (see
    /// [`advance_past_running`](Context::advance_past_running)). Written
    /// and read off the fast paths only.
    running_token: Cell<u64>,
    pub(crate) panics: Counter,
    pub(crate) errors: Counter,
    /// The `thread::id` of the owner while it releases the context's
    /// `#[local]` values, or 0: the context has left the thread's slot
    /// then, but not yet the thread, and a `fork` from a `Local::release`
    /// must not hand it back in the child (see `thread::reclaim_orphans`).
    releasing: Cell<usize>,
    // What follows only cold paths touch.
    /// The last nested calls found certainly gone while recorded as
    /// running (see [`claim_gone`](Context::claim_gone)).
    gone: GoneCalls,
    /// References to closures the owner's running calls hold that nothing
    /// else records, for a `fork` child to give up (see `closure`).
    pub(crate) held: HeldRefs,
}

// SAFETY: the non-atomic fields are reached only through `unsafe` methods
// whose callers run on the owning thread (see the type's docs); other
// threads read only the atomic counters.
unsafe impl Sync for Context {}

impl Context {
    pub(crate) fn new() -> Context {
        Context {
            running: Running::new(),
            outer_token: Cell::new(0),
            running_token: Cell::new(0),
            nested_calls: Cell::new(0),
            locals: Locals::new(),
            per_call: Cell::new(false),
            after_exit: Cell::new(false),
            forgotten_may_resume: Cell::new(false),
            link: Link::new(),
            binds: Counter::new(),
            releases: Counter::new(),
            calls_when_gone: Cell::new((0, 0)),
            hazard: Hazard::new(),
            stack: ThreadStack::new(),
            nested: UnsafeCell::new(Vec::new()),
            panics: Counter::new(),
            errors: Counter::new(),
            releasing: Cell::new(0),
            gone: GoneCalls::new(),
            held: HeldRefs::new(),
        }
    }

    /// Sets how the context serves the thread that just became its owner;
    /// `new_thread` when it served another thread (or none) before.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, and no callback runs on it yet.
    pub(crate) unsafe fn set_per_call(&self, per_call: bool, after_exit: bool, new_thread: bool) {
        self.per_call.set(per_call);
        self.after_exit.set(after_exit);
        if new_thread {
            self.stack.forget();
        }
    }

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

    /// True when the context serves a thread whose bound context was
    /// released at its exit, or one without an exit hook.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn after_exit(&self) -> bool {
        self.after_exit.get()
    }

    /// True when the context is released when the outermost call
    /// returns (attached per call).
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn per_call(&self) -> bool {
        self.per_call.get()
    }

    /// How many callbacks run on the owner right now.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn depth(&self) -> u32 {
        self.running.entry() as u32 & DEPTH
    }

    /// The index of the `#[local]` value the outermost call holds through
    /// the entry word, or 0.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn held_local(&self) -> u32 {
        held_in(self.running.entry())
    }

    /// This context's `T` for a `#[local]` parameter of the running call
    /// at `depth` whose anchor is `anchor` (see `Locals::get`).
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, inside the call that entered at
    /// `depth` with `anchor` (so its anchor holds its token).
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn local<T: Local>(
        &self,
        key: &LocalKey<T>,
        depth: u32,
        anchor: &Anchor,
    ) -> Result<LocalRef<'_, T>, Failure> {
        // A hold through the slot's state outlives the call if its
        // `LocalRef` is leaked: the calls after this one get a new token.
        // SAFETY: owning thread, inside a call (caller obligations).
        unsafe { self.advance_past_running() };
        let caller = Holder {
            // SAFETY: the call entered with `anchor` (caller obligation).
            call: unsafe { anchor.holder_mark() },
            // Set by `advance_past_running` above.
            outermost: self.running_token.get(),
            outer_address: self.running.outer(),
        };
        // SAFETY: owning thread, inside the call marked `caller` (caller
        // obligations); `held` from the entry word.
        unsafe {
            self.locals
                .get(key, depth, self.held_local(), caller, &self.stack)
        }
    }

    /// True when the call marked `holder` (its mark kept by something it
    /// took: a `Closure::new` turn, see `Frame::mark`) certainly has no
    /// frame left, seen from the outermost running call of the
    /// owner: its token is from before the context last changed hands
    /// (see [`calls_when_gone`](Context::calls_when_gone)), or its own mark
    /// tells (`Mark::holder_is_gone`: below the outermost call's anchor on
    /// the thread's own stack, or its anchor's memory reused). A holder
    /// elsewhere (on a coroutine stack, where it may be suspended) is
    /// kept.
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

    /// True when `holder` (the mark a `Closure::new` turn keeps of the
    /// call that took it) is that of a nested call this context found
    /// certainly gone while it was recorded as running, among the last few
    /// (see [`GoneCalls`]); forgotten then, so that only one call takes
    /// over what it held. Unlike [`holder_is_gone`](Context::holder_is_gone)
    /// it holds from any depth: a nested token names one call in the
    /// process, which never returned, so a turn that keeps its mark was not
    /// taken since (a call that takes a turn has ended it, or keeps it
    /// under its own mark).
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

    /// True when a call that may still run holds a `#[local]` value of
    /// the context, now that its outermost call returned: a callback that
    /// started inside it on another stack of the thread and is suspended
    /// there (see `Locals::held_past_the_outermost_call`).
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, as its outermost call returns.
    pub(crate) unsafe fn held_past_the_outermost_call(&self) -> bool {
        // SAFETY: forwarded caller obligation.
        unsafe { self.locals.held_past_the_outermost_call(&self.stack) }
    }

    /// Keeps a per-call context on its thread as a bound one.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn keep_bound(&self) {
        self.per_call.set(false);
    }

    /// Records that the owning thread, `thread` (its `thread::id`), is
    /// releasing the context's `#[local]` values, or with 0 that it is
    /// done.
    ///
    /// # Safety
    ///
    /// The caller is the owning thread.
    pub(crate) unsafe fn set_releasing(&self, thread: usize) {
        self.releasing.set(thread);
    }

    /// The thread releasing the context's `#[local]` values
    /// ([`set_releasing`](Context::set_releasing)), or 0.
    ///
    /// # Safety
    ///
    /// The caller is the owning thread, or the only thread of a `fork`
    /// child.
    #[cfg(unix)]
    pub(crate) unsafe fn releasing(&self) -> usize {
        self.releasing.get()
    }

    /// True when the owner may be inside a call on the context, where it
    /// may hold a `Closure::new` turn under the context's mark: a call is
    /// recorded as running (or was abandoned and not yet found so), or one
    /// that a `leave` forgot may resume on another stack.
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

    /// Resets a context whose thread does not exist in this `fork` child.
    /// Returns what its hazard word announced (see
    /// [`Hazard::withdraw`]): a call of that thread that will never
    /// return, whose hold the caller ends.
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

    /// A callback starts on the owning thread, with `anchor` in its frame,
    /// if no call is recorded as running there: the fast path of a bound
    /// thread. Returns false, doing nothing, otherwise; the caller then
    /// takes [`enter`](Context::enter). A call started here ends with
    /// [`leave_outermost`](Context::leave_outermost).
    ///
    /// # Safety
    ///
    /// As for [`enter`](Context::enter).
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
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
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
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
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
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
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn enter_idle_holding(&self, anchor: &Anchor, entry: u64) {
        debug_assert_eq!(self.running.entry(), 0);
        debug_assert_eq!(entry as u32, 1, "an outermost call's entry word");
        self.mark_outermost(anchor);
        self.running.set_entry(entry);
    }

    /// Records the call whose anchor is `anchor` as the outermost one, with
    /// the current outermost token. (Two stores, the anchor and its
    /// address, which the compiler drops where nothing can read them before
    /// the call leaves: see [`Running`].)
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn mark_outermost(&self, anchor: &Anchor) {
        let token = self.outer_token.get();
        self.running.set_outer(anchor.mark(token).address());
    }

    /// Gives the outermost calls from now on a token no earlier call had.
    /// Only where no outermost call runs, where the one recorded is gone,
    /// or where its token was kept aside
    /// ([`advance_past_running`](Context::advance_past_running)): a
    /// running one's mark holds the token (see
    /// [`outer_mark`](Context::outer_mark)).
    fn advance(&self) {
        self.outer_token.set(self.outer_token.get().wrapping_add(1));
    }

    /// Something inside the running outermost call (a nested call, a
    /// `#[local]` lookup) may leave a mark behind that outlives it: gives
    /// the outermost calls after it a new token now, keeping the running
    /// one's in [`running_token`](Context::running_token) with
    /// [`ADVANCED`] set in the entry word. Its leave then has nothing to
    /// check, and the entry word of the next outermost call clears the
    /// flag.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, inside an outermost call that
    /// is running (the depth is at least 1): at depth 0 the flag would
    /// outlive every call and make the next outermost one's mark carry a
    /// token that is not its own.
    unsafe fn advance_past_running(&self) {
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
    fn outer_mark(&self) -> Mark {
        Mark::new(self.running.outer(), self.running_outer_token())
    }

    /// The call that [`enter_outermost`](Context::enter_outermost) started
    /// returns. Unlike [`leave`](Context::leave) it never asks for a
    /// release: a per-call context is in the thread's slot only while the
    /// call that attached it runs, and that call enters through `enter`
    /// and releases it when it leaves. (A call that finds one with no call
    /// running interrupted that call between its attach and its `enter`,
    /// a signal handler, and must leave the release to it.)
    ///
    /// Calls nested in this one that were abandoned may have left values
    /// held in their slots' states. Each such hold records its holder and
    /// this outermost call's token, so a lookup takes the value once the
    /// holder is certainly gone (`Holder::is_gone`): by its own mark, or
    /// because it lies below this call on the thread's own stack and this
    /// call is over, which the next outermost call tells by its token:
    /// the token advanced when the nested call started or the value was
    /// looked up ([`advance_past_running`](Context::advance_past_running)).
    /// So the leave has nothing to check; where the body calls nothing,
    /// the call's records are dead stores (see `Running`), and one store
    /// is left after the body.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - The returning call entered with `enter_outermost` and has not
    ///   left yet.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn leave_outermost(&self) {
        // Depth 0, no `ADVANCED`, and the call's hold ends.
        self.running.set_idle();
    }

    /// A callback starts on the owning thread, with `anchor` in its frame;
    /// returns the depth it starts at, which its `leave` restores.
    ///
    /// The outermost call only records its mark. A call that starts while
    /// others are recorded as running takes the cold path, which first
    /// drops the recorded calls whose frames are provably gone.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - `anchor` is in the frame of the call that is starting and lives
    ///   until that call leaves.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn enter(&self, anchor: &Anchor) -> u32 {
        // SAFETY: owning thread (caller obligation).
        let recorded = unsafe { self.depth() };
        let start = if recorded == 0 {
            // Off the fast path, a token of its own whatever came before:
            // the same margin as `leave`'s (see there).
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
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn set_depth(&self, depth: u32) {
        self.running
            .set_entry(self.running.entry() & !u64::from(DEPTH) | u64::from(depth));
    }

    /// Ends the hold of the `#[local]` value the outermost call holds
    /// through the entry word, and clears [`ADVANCED`]: that call is gone
    /// and the one starting takes its place with the outermost token.
    fn free_entry_hold(&self) {
        self.running
            .set_entry(self.running.entry() & u64::from(DEPTH));
    }

    /// The cold half of `enter`: `recorded` calls are recorded as running.
    /// Keeps those that may still be running (see [`stack`]) and records
    /// the new call. If the outermost one is gone, so is the hold of its
    /// entry word; the values calls held through their slots' states are
    /// judged by each holder's own mark when they are looked up
    /// (`Locals::get`).
    ///
    /// The new call's anchor gets a nested token first, so a recorded call
    /// whose anchor was at the same address is seen as overwritten; if no
    /// recorded call is live, the call becomes the outermost one and gets
    /// an outermost token instead.
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
    unsafe fn enter_nested(&self, recorded: u32, anchor: &Anchor) -> u32 {
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

    /// A callback that entered at depth `start` returns; true when it was
    /// the outermost one of a per-call attachment, which must now be
    /// released.
    ///
    /// Restoring `start` (rather than decrementing) forgets the calls
    /// recorded deeper: calls nested in this one that were abandoned, or,
    /// on a thread with several stacks, calls that started after this one
    /// on another stack and are suspended there. The values those hold
    /// stay held until their holders are found gone (`Locals::get`).
    ///
    /// A call that finds fewer calls recorded than its own depth was
    /// forgotten that way: a call it started under returned first (green
    /// threads: callbacks on several coroutine stacks of one thread need
    /// not finish in the order they started). What is recorded now belongs
    /// to other calls, so it leaves it as it is.
    ///
    /// A forgotten call that may be suspended rather than gone keeps the
    /// context on the thread for good (see
    /// [`forget_deeper`](Context::forget_deeper)).
    ///
    /// The outermost call advances the outermost token as it leaves. The
    /// token rules do not need it (a call forgotten here started inside
    /// this one, and that start already advanced it); it is a margin that
    /// costs nothing off the fast path: a call that went through the slow
    /// path shares its token with none after it.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - `start` is what the `enter` of the call that is returning gave,
    ///   and that call has not left yet.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
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
            // No call runs any more: depth 0 and no `ADVANCED`; the held
            // index is 0 (a call that entered through `enter` holds
            // nothing through the word). The next outermost call gets a
            // new token (a margin: see above).
            self.running
                .set_entry(self.running.entry() & !u64::from(u32::MAX));
            self.advance();
        } else {
            // Keeps the held index (an outer call's) and `ADVANCED`
            // for the outermost call.
            self.set_depth(start);
        }
        // `&`, not `&&`: straight-line code with one not-taken branch on the
        // common path (a short-circuit made LLVM jump out and back).
        self.per_call.get() & (start == 0)
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
    unsafe fn forget_deeper(&self, start: u32, depth: u32) {
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

    /// True when a call that a `leave` forgot may be suspended on another
    /// stack and resume (see [`forget_deeper`](Context::forget_deeper)).
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn forgotten_may_resume(&self) -> bool {
        self.forgotten_may_resume.get()
    }

    /// The owning thread gives the context up (it goes back to the free
    /// list, for another thread to take): records its calls as over for
    /// the next owner, unless a call it forgot may still resume, and
    /// clears [`forgotten_may_resume`](Context::forgotten_may_resume).
    ///
    /// Its calls on the context are all over then: its outermost call
    /// returned or it is exiting, and a call forgotten on the way was
    /// judged gone by its mark, or set `forgotten_may_resume` (which keeps
    /// a living thread's context with it: `thread::release`). So a turn
    /// stamped by one of them (a call abandoned inside a `Closure::new`
    /// body) can be taken back by the next owner's calls, on whatever
    /// stack it was abandoned.
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

    /// Every call made on the context is over, wherever it ran (its thread
    /// is exiting, or is not in this `fork` child, or gave it up): records
    /// the last tokens they had
    /// ([`calls_when_gone`](Context::calls_when_gone)), advances the
    /// outermost token past them, and clears
    /// [`forgotten_may_resume`](Context::forgotten_may_resume).
    fn all_calls_over(&self) {
        self.forgotten_may_resume.set(false);
        self.calls_when_gone
            .set((self.outer_token.get(), self.nested_calls.get()));
        // The next outermost call's token is above the recorded one.
        self.advance();
    }

    /// The owning thread is exiting and none of its frames remain: forget
    /// every call recorded as running and free every `#[local]` value.
    /// Returns what the hazard word announced (see [`Hazard::withdraw`]):
    /// an abandoned call's, whose hold the caller ends.
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
}

/// The entry word and the address of the outermost running call's
/// anchor, side by side in 16 aligned bytes, so that the outermost call
/// leaves by clearing both with one store.
///
/// The entry word holds two numbers, so that the outermost call of a
/// callback with one `#[local]` parameter enters with one store and every
/// outermost call leaves with one:
///
/// * the low 31 bits, the *depth*: how many callbacks are running on the
///   owning thread right now, as far as the runtime knows (calls whose
///   frames were abandoned, by `longjmp` or a forced unwind, are counted
///   until a `leave` or the next entry finds out; see [`stack`]);
/// * bit 31, [`ADVANCED`]: something inside the outermost call may leave
///   a mark behind, so the outermost token moved past the call's, which
///   is in `Context::running_token`;
/// * the high 32 bits, the *held* index: the `#[local]` value the
///   outermost call took through
///   [`enter_idle_holding`](Context::enter_idle_holding), or 0. It is
///   non-zero only while the depth is (the call is running, or its frame
///   was abandoned and nobody has found out yet).
///
/// The address (its token is `Context::outer_token`) is only read while the
/// depth is non-zero. Since the leave overwrites it with the entry word,
/// the outermost call's records (the entry word, the address and the
/// anchor's token) are dead stores wherever the compiler sees that nothing
/// can read them before the call leaves: a body inlined into the
/// trampoline that calls nothing it cannot see and writes no memory it
/// cannot tell apart from the context (`x + 1`, a `qsort` comparator
/// reading two elements). The compiler drops them there (`objdump` of the
/// benchmark's bound callback: one 16-byte store left).
/// It keeps them wherever the body makes a call that could start a nested
/// callback, `longjmp` or end the thread, and wherever it writes through a
/// pointer (an out-parameter) which might be the context as far as the
/// compiler knows. A `#[local]` value taken on the fast path is not such
/// a pointer: it reaches the call as a `&mut T` parameter
/// (`boundary::outermost_holding`), which the compiler knows nothing else
/// there reaches, so a body that only uses its value and its arguments
/// leaves them dead too (`objdump` of the benchmark's `#[local]`
/// callback: the bound callback's code plus the key's compare, the value's
/// load and the body's increment).
#[repr(C, align(16))]
struct Running(UnsafeCell<[u64; 2]>);

impl Running {
    const fn new() -> Running {
        Running(UnsafeCell::new([0; 2]))
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn entry(&self) -> u64 {
        // SAFETY: only the context's owner reaches `Running` (the
        // `Context` methods that do are `unsafe`, their callers vouch for
        // it), and no reference into the cell outlives a method.
        unsafe { (*self.0.get())[0] }
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn set_entry(&self, entry: u64) {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[0] = entry };
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn outer(&self) -> usize {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[1] as usize }
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn set_outer(&self, address: usize) {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[1] = address as u64 };
    }

    /// No call running: both words 0, in one 16-byte store.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn set_idle(&self) {
        // SAFETY: as in `entry`.
        unsafe { *self.0.get() = [0; 2] };
    }
}

/// The bit of the entry word's low half that says the outermost token
/// moved past the running outermost call's
/// ([`Context::advance_past_running`]). Set only while the depth is at
/// least 1: every store that makes the depth 0 clears it, and so does a
/// call that becomes the outermost one in place of a gone one
/// (`free_entry_hold`).
const ADVANCED: u32 = 1 << 31;

/// The depth's bits of the entry word's low half.
const DEPTH: u32 = !ADVANCED;

/// The bit that tells a nested call's token from an outermost one's: the
/// two counts stay far below it.
const NESTED_TOKEN: u64 = 1 << 63;

/// Nested calls recorded without allocating.
const NESTED_RESERVE: usize = 16;

pub(crate) type ContextNode = Node<Context>;

// SAFETY: both return the `link` field, which no method of `Context`
// touches: only the free list reaches it.
unsafe impl Pooled for Context {
    fn link(&self) -> &Link {
        &self.link
    }

    fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }
}

// What a bound call touches and the `#[local]` fast path's remembered value
// and table (the first 32 bytes of `Locals`) share the node's first cache
// line; the free list's link is in the second, with what a bind writes.
const _: () = assert!(core::mem::offset_of!(ContextNode, value) == 0);
const _: () = assert!(core::mem::offset_of!(Context, locals) + 32 <= 64);
const _: () = assert!(core::mem::offset_of!(Context, link) >= 64);
const _: () = assert!(core::mem::offset_of!(Context, binds) + 8 <= 128);
const _: () = assert!(core::mem::offset_of!(Context, hazard) + 8 <= 128);

/// Where in a 128-byte line pair no fast path of a context writes: the
/// second word of [`Context::calls_when_gone`], which only a thread giving
/// its context up writes, in a node's first pair, and a word of
/// [`Context::held`], which only cold paths write (a call waiting for a
/// turn), in its second. (`tls` places the word every call reads first at this
/// offset of its own pair; see `QUIET_OFFSET`'s use there.)
///
/// x86-64 CPUs tell a load from an older store that is still in the store
/// buffer by the low 12 bits of their addresses first (Intel's "4K
/// aliasing"): a load whose address has the same low bits as such a store,
/// in another page, waits as if it read what the store writes. A call's
/// stores to its context would make the next call's read of that word wait
/// wherever the context and the word sit at the same offset in their pages
/// (contexts are 128-byte aligned, so one in 32 of them): 0.16–0.35 ns
/// more per call on one Intel CPU (see the guide's Performance method).
// Only the x86-64 glibc slot reads it; elsewhere only the assertions below
// use it, which Rust 1.85 (the oldest this crate builds with) does not count.
#[cfg_attr(
    not(all(
        target_arch = "x86_64",
        target_os = "linux",
        target_env = "gnu",
        not(callgate_portable_tls)
    )),
    allow(dead_code)
)]
pub(crate) const QUIET_OFFSET: usize = core::mem::offset_of!(Context, calls_when_gone) + 8;
// Every field a fast path writes ends before the quiet word or starts
// after it, in both of the node's line pairs.
const _: () = assert!(QUIET_OFFSET % 8 == 0 && QUIET_OFFSET + 8 <= 128);
const _: () = assert!(core::mem::offset_of!(Context, releases) + 8 <= QUIET_OFFSET);
const _: () = assert!(core::mem::offset_of!(Context, hazard) >= QUIET_OFFSET + 8);
const _: () = assert!(core::mem::offset_of!(Context, releasing) + 8 <= 128 + QUIET_OFFSET);
const _: () = assert!(core::mem::size_of::<ContextNode>() <= 256);

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs an outermost call on `context` from `anchor` that returns at
    /// once, and gives its token.
    fn call(context: &Context, anchor: &Anchor) -> u64 {
        // SAFETY: the test thread owns `context`, which is idle; `anchor`
        // outlives the call.
        unsafe {
            assert!(context.enter_outermost(anchor), "idle");
            let token = context.outer_mark().token();
            context.leave_outermost();
            token
        }
    }

    /// A call nested in the one running on `context`, in a frame below
    /// the caller's, that returns at once.
    #[inline(never)]
    fn nested_call(context: &Context) {
        let inner = Anchor::new();
        // SAFETY: the test thread owns `context`, inside a call whose
        // anchor is above this frame; the call leaves before `inner` goes.
        unsafe {
            let start = context.enter(&inner);
            assert_eq!(start, 1, "nested");
            assert!(!context.leave(start));
        }
    }

    #[test]
    fn outermost_calls_share_a_token_until_one_may_leave_something_behind() {
        let context = Context::new();
        let anchor = Anchor::new();
        let first = call(&context, &anchor);
        assert_eq!(call(&context, &anchor), first, "nothing left behind");

        // A call inside which a nested call started (and returned).
        // SAFETY: the test thread owns `context`; the call leaves before
        // its anchor goes.
        let during = unsafe {
            assert!(context.enter_outermost(&anchor), "idle");
            let during = context.outer_mark().token();
            nested_call(&context);
            assert_eq!(context.outer_mark().token(), during, "still running");
            context.leave_outermost();
            during
        };
        assert_eq!(during, first);
        let after_nested = call(&context, &anchor);
        assert_ne!(after_nested, first, "the next call's token is new");

        // An abandoned call: the next one, from the same place, finds it
        // recorded, tells it is gone (its anchor now holds another token)
        // and becomes the outermost call with a new token.
        // SAFETY: as above; the abandoned call never leaves.
        let (abandoned, next) = unsafe {
            assert!(context.enter_outermost(&anchor), "idle");
            let abandoned = context.outer_mark().token();
            let start = context.enter(&anchor);
            assert_eq!(start, 0, "the abandoned call is gone");
            let next = context.outer_mark().token();
            assert!(!context.leave(start));
            (abandoned, next)
        };
        assert_eq!(abandoned, after_nested);
        assert_ne!(next, abandoned);
        // A call through `leave` advances the token too.
        let last = call(&context, &anchor);
        assert_ne!(last, next);

        // Handed on: every earlier call is over for the next owner, and
        // the next owner's calls are not.
        // SAFETY: the test thread owns `context`; no call runs on it.
        unsafe { context.give_up() };
        let mark = Mark::new(0, last);
        // SAFETY: as above, asked from inside an outermost call.
        unsafe {
            assert!(context.enter_outermost(&anchor), "idle");
            let now = context.outer_mark().token();
            assert!(now > last);
            assert!(context.holder_is_gone(mark));
            assert!(!context.holder_is_gone(Mark::new(0, now)));
            context.leave_outermost();
        }
    }

    /// A nested call abandoned inside an outermost one: the next nested
    /// call from the same place finds it gone and remembers it, and its
    /// mark is claimed once. A running call's mark is never claimed, and
    /// another context's nested calls get other tokens.
    #[test]
    fn a_nested_call_found_gone_is_claimed_once() {
        // One array: the outermost call's anchor lies above the nested
        // calls' anchor, as a frame further up would.
        let anchors = [Anchor::new(), Anchor::new()];
        let (inner, outer) = (&anchors[0], &anchors[1]);
        let context = Context::new();
        // SAFETY: the test thread owns `context`; the calls that leave do
        // so before the anchors go, and the abandoned one never leaves.
        let abandoned = unsafe {
            assert!(context.enter_outermost(outer), "idle");
            assert_eq!(context.enter(inner), 1, "nested");
            let abandoned = inner.current_mark();
            assert!(!context.claim_gone(abandoned), "still running");
            // Its anchor now holds the next call's token: it is gone.
            assert_eq!(context.enter(inner), 1, "nested in the outermost call");
            let next = inner.current_mark();
            assert_ne!(next.token(), abandoned.token());
            assert!(!context.claim_gone(next), "running");
            assert!(context.claim_gone(abandoned));
            assert!(!context.claim_gone(abandoned), "claimed once");
            assert!(!context.leave(1));
            context.leave_outermost();
            abandoned
        };
        let other = Context::new();
        // SAFETY: as above.
        unsafe {
            assert!(other.enter_outermost(outer), "idle");
            assert_eq!(other.enter(inner), 1, "nested");
            assert_ne!(inner.current_mark().token(), abandoned.token());
            assert!(!other.leave(1));
            other.leave_outermost();
        }
    }

    #[test]
    fn a_local_looked_up_inside_a_call_advances_the_token_after_it() {
        #[derive(Default)]
        struct Value;
        impl Local for Value {}
        static KEY: LocalKey<Value> = LocalKey::new();
        let context = Context::new();
        let anchor = Anchor::new();
        let first = call(&context, &anchor);
        // SAFETY: the test thread owns `context`; the call leaves before
        // its anchor goes, and its value is dropped before.
        unsafe {
            assert!(context.enter_outermost(&anchor), "idle");
            drop(context.local(&KEY, 1, &anchor).expect("free"));
            context.leave_outermost();
        }
        assert_ne!(call(&context, &anchor), first);
    }
}
