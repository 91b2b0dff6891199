//! Thread contexts: the per-thread runtime state, pooled and recycled.

use core::cell::Cell;

use crate::freelist::{FreeList, Node};
use crate::local::Locals;
use crate::sync::{AtomicU64, Ordering};

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

    #[inline(always)]
    pub(crate) fn bump(&self) {
        // Relaxed: a statistic with a single writer (the owning thread), so
        // load + store cannot lose an update; readers only need atomicity.
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
    }

    pub(crate) fn get(&self) -> u64 {
        // Relaxed: a statistic.
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
/// Aligned to 128 bytes (two cache lines, the unit the adjacent-line
/// prefetcher pulls in) so the counters two threads write on their fast
/// paths never share a line: no false sharing between bound threads.
#[repr(align(128))]
pub(crate) struct Context {
    /// How many callbacks are running on the owning thread right now.
    depth: Cell<u32>,
    /// Release the context when the outermost call returns.
    per_call: Cell<bool>,
    /// Serving a thread whose bound context was already released at exit.
    after_exit: Cell<bool>,
    pub(crate) binds: Counter,
    pub(crate) releases: Counter,
    pub(crate) calls: Counter,
    pub(crate) panics: Counter,
    pub(crate) errors: Counter,
    pub(crate) locals: Locals,
}

// SAFETY: the non-atomic fields are reached only through `unsafe` methods
// whose callers run on the owning thread (see the type's docs); other
// threads read only the atomic counters.
unsafe impl Sync for Context {}

impl Context {
    pub(crate) const fn new() -> Context {
        Context {
            depth: Cell::new(0),
            per_call: Cell::new(false),
            after_exit: Cell::new(false),
            binds: Counter::new(),
            releases: Counter::new(),
            calls: Counter::new(),
            panics: Counter::new(),
            errors: Counter::new(),
            locals: Locals::new(),
        }
    }

    /// Sets how the context serves the thread that just became its owner.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, and no callback runs on it yet.
    pub(crate) unsafe fn set_per_call(&self, per_call: bool, after_exit: bool) {
        self.per_call.set(per_call);
        self.after_exit.set(after_exit);
    }

    /// True when the context serves a thread whose bound context was
    /// released at its exit.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn after_exit(&self) -> bool {
        self.after_exit.get()
    }

    /// How many callbacks run on the owner right now.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn depth(&self) -> u32 {
        self.depth.get()
    }

    /// Resets a context whose thread does not exist in this `fork` child.
    ///
    /// # Safety
    ///
    /// The caller is the only thread of a `fork` child and the context is
    /// not serving it.
    pub(crate) unsafe fn reset_orphan(&self) {
        self.depth.set(0);
        self.per_call.set(false);
        self.after_exit.set(false);
        // SAFETY: forwarded caller obligation.
        unsafe { self.locals.abandon() };
        // Count the release only if the context was attached: a thread may
        // have been between popping and counting its bind, or between
        // counting its release and pushing, when the parent forked.
        if self.binds.get() > self.releases.get() {
            self.releases.bump();
        }
    }

    /// A callback starts on the owning thread.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    #[inline(always)]
    pub(crate) unsafe fn enter(&self) {
        self.depth.set(self.depth.get().wrapping_add(1));
        self.calls.bump();
    }

    /// A callback returns; true when it was the outermost one of a
    /// per-call attachment, which must now be released.
    ///
    /// # Safety
    ///
    /// - The caller is the context's owner.
    /// - It pairs with the `enter` of the call that is returning: an
    ///   unpaired `leave` makes the depth lie, and the context could be
    ///   released under a call that is still running.
    #[inline(always)]
    pub(crate) unsafe fn leave(&self) -> bool {
        let depth = self.depth.get().wrapping_sub(1);
        self.depth.set(depth);
        // `&`, not `&&`: straight-line code with one not-taken branch on the
        // common path (a short-circuit made LLVM jump out and back).
        self.per_call.get() & (depth == 0)
    }
}

pub(crate) type ContextNode = Node<Context>;
