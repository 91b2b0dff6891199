//! Thread contexts: the per-thread runtime state, pooled and recycled.
//!
//! A [`Context`] serves one thread at a time. It records the callbacks
//! running there (`calls`, `running`; nested calls' cold paths in
//! `nested`), tells when the calls of the threads it served before are
//! over (`handover`), and counts what `stats()` reports (`counter`).

use core::cell::{Cell, UnsafeCell};

use crate::failure::Failure;
use crate::freelist::{FreeList, Link, Node, Pooled};
use crate::local::{Holder, Local, LocalKey, LocalRef, Locals, held_in};
use crate::stack::{Anchor, GoneCalls, Mark, ThreadStack};
use crate::sync::{Hazard, HeldRefs};

mod calls;
mod counter;
mod handover;
mod nested;
mod running;
#[cfg(test)]
mod tests;

use counter::Counter;
use running::{DEPTH, Running};

/// Every context ever created; freed only when the library is unloaded
/// with no thread bound (`hooks`).
pub(crate) static CONTEXTS: FreeList<Context> = FreeList::new();

/// The runtime state of one bound thread.
///
/// The `Cell` fields and the locals belong to the thread the context
/// currently serves, its *owner*: the methods that touch them are `unsafe`,
/// and their callers vouch for running on the owner. A context changes
/// owner only through the free list, whose Release/Acquire pair orders the
/// previous owner's accesses before the next owner's.
///
/// Each lives in a [`Node`] of [`CONTEXTS`]; the fast paths rely on the
/// field order (asserted below).
#[repr(C)]
pub(crate) struct Context {
    // What a bound call touches: the node's first cache line.
    /// The entry word and the outermost call's anchor address ([`Running`]).
    running: Running,
    /// The outermost calls' token (see [`stack`](crate::stack)): calls
    /// that leave nothing behind share it, and it advances
    /// ([`advance`](Context::advance)) wherever one may have.
    outer_token: Cell<u64>,
    /// The count of the last nested call's token (the count with
    /// [`NESTED_TOKEN`](nested::NESTED_TOKEN) set), or the start of its
    /// block ([`next_nested_count`](Context::next_nested_count)).
    nested_calls: Cell<u64>,
    /// The `#[local]` values, whose table the `#[local]` fast path reads.
    pub(crate) locals: Locals,
    /// Release the context when the outermost call returns.
    per_call: Cell<bool>,
    /// Serving a thread whose bound context was already released at exit,
    /// or one without an exit hook (no pthread key was left): per call,
    /// never cached.
    after_exit: Cell<bool>,
    /// A call that a `leave` or an `enter` forgot may resume on another
    /// stack of the thread ([`forget_deeper`](Context::forget_deeper)):
    /// the context stays with the thread until it exits.
    forgotten_may_resume: Cell<bool>,
    // What a bind and a per-call release touch: the second line.
    link: Link,
    pub(crate) binds: Counter,
    pub(crate) releases: Counter,
    /// [`outer_token`](Context::outer_token) and
    /// [`nested_calls`](Context::nested_calls) when the last thread served
    /// gave the context up with all its calls over: a call whose token is
    /// at most these is over ([`Context::holder_is_gone`]).
    calls_when_gone: Cell<(u64, u64)>,
    /// The `Closure::concurrent` a running call of the owner announced
    /// (see `closure`), or 0; a thread writes only its own.
    pub(crate) hazard: Hazard,
    /// The owning thread's stack bounds, for telling abandoned calls.
    stack: ThreadStack,
    /// The marks of the nested running calls, for the cold paths:
    /// `nested[d - 1]` is the mark of the call that entered at depth `d`.
    nested: UnsafeCell<Vec<Mark>>,
    /// The running outermost call's token while
    /// [`ADVANCED`](running::ADVANCED) is set: the outermost token moved
    /// past it ([`advance_past_running`](Context::advance_past_running)).
    running_token: Cell<u64>,
    pub(crate) panics: Counter,
    pub(crate) errors: Counter,
    /// The `thread::id` of the owner while it releases the context's
    /// `#[local]` values, or 0: a `fork` from a `Local::release` must not
    /// hand the context back in the child (see `thread::reclaim_orphans`).
    releasing: Cell<usize>,
    // Cold.
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
    #[hot_path]
    pub(crate) unsafe fn per_call(&self) -> bool {
        self.per_call.get()
    }

    /// Keeps a per-call context on its thread as a bound one.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn keep_bound(&self) {
        self.per_call.set(false);
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
    #[hot_path]
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
}

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

// A bound call's fields and the first 32 bytes of `Locals` (what the
// `#[local]` fast path reads) share the first cache line; what a bind
// writes, the free list's link included, is in the second.
const _: () = assert!(core::mem::offset_of!(ContextNode, value) == 0);
const _: () = assert!(core::mem::offset_of!(Context, locals) + 32 <= 64);
const _: () = assert!(core::mem::offset_of!(Context, link) >= 64);
const _: () = assert!(core::mem::offset_of!(Context, binds) + 8 <= 128);
const _: () = assert!(core::mem::offset_of!(Context, hazard) + 8 <= 128);

/// Where in a 128-byte line pair no fast path of a context writes. `tls`
/// puts the word every call reads first at this offset of its own pair, so
/// no call's store shares its page offset ("4K aliasing" on x86-64).
// Rust 1.85 does not count the assertions below as a use.
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
