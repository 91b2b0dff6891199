//! Thread contexts: the per-thread runtime state, pooled and recycled.
//!
//! A [`Context`] serves one thread at a time: it records the callbacks
//! running there (`calls`, `running`, `nested`), the end of its earlier
//! owners' calls (`handover`), and what `stats()` counts (`counter`).

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
/// serves, its *owner*: the methods that touch them are `unsafe`, their
/// callers vouch for running on it. A context changes owner only through
/// the free list, whose Release/Acquire pair orders the two owners'
/// accesses. The fast paths rely on the field order (asserted below).
#[repr(C)]
pub(crate) struct Context {
    // What a bound call touches: the node's first cache line.
    running: Running,
    /// The outermost calls' token (see [`stack`](crate::stack)).
    outer_token: Cell<u64>,
    /// The count of the last nested call's token, or the start of its block
    /// ([`next_nested_count`](Context::next_nested_count)).
    nested_calls: Cell<u64>,
    pub(crate) locals: Locals,
    /// Release the context when the outermost call returns.
    per_call: Cell<bool>,
    /// Serving a thread whose exit hook ran or cannot run: per call, never
    /// cached.
    after_exit: Cell<bool>,
    /// A forgotten call may resume on another stack of the thread
    /// ([`forget_deeper`](Context::forget_deeper)): keep the context.
    forgotten_may_resume: Cell<bool>,
    // What a bind and a per-call release touch: the second line.
    link: Link,
    pub(crate) binds: Counter,
    pub(crate) releases: Counter,
    /// The two tokens when the last owner gave the context up with all its
    /// calls over: a call whose token is at most these is over.
    calls_when_gone: Cell<(u64, u64)>,
    /// What a running call of the owner announced (see `closure`), or 0.
    pub(crate) hazard: Hazard,
    stack: ThreadStack,
    /// The marks of the nested running calls: `nested[d - 1]` is the mark of
    /// the call that entered at depth `d`.
    nested: UnsafeCell<Vec<Mark>>,
    /// The running outermost call's token while
    /// [`ADVANCED`](running::ADVANCED) is set.
    running_token: Cell<u64>,
    pub(crate) panics: Counter,
    pub(crate) errors: Counter,
    /// The `thread::id` of the owner while it releases the `#[local]` values,
    /// or 0, for `thread::reclaim_orphans`.
    releasing: Cell<usize>,
    // Cold.
    /// Nested calls found gone (see [`claim_gone`](Context::claim_gone)).
    gone: GoneCalls,
    /// Closure references only the owner's calls record, for a `fork` child.
    pub(crate) held: HeldRefs,
}

// SAFETY: the non-atomic fields are reached only through `unsafe` methods
// whose callers run on the owning thread; other threads read only atomics.
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

    /// Sets how the context serves its new owner; `new_thread` when it served
    /// another thread (or none) before.
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

    /// True when the owner's exit hook ran or cannot run.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn after_exit(&self) -> bool {
        self.after_exit.get()
    }

    /// True when the outermost call's return releases the context.
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

    /// The index of the `#[local]` value held through the entry word, or 0.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner.
    pub(crate) unsafe fn held_local(&self) -> u32 {
        held_in(self.running.entry())
    }

    /// This context's `T` for the running call at `depth` with `anchor` (see
    /// `Locals::get`).
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
        // A leaked `LocalRef`'s hold outlives the call: later calls get a new
        // token.
        // SAFETY: owning thread, inside a call (caller obligations).
        unsafe { self.advance_past_running() };
        let caller = Holder {
            // SAFETY: the call entered with `anchor` (caller obligation).
            call: unsafe { anchor.holder_mark() },
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

    /// True when a call suspended on another stack of the thread may still
    /// hold a `#[local]` value now that the outermost call returned.
    ///
    /// # Safety
    ///
    /// The caller is the context's owner, as its outermost call returns.
    pub(crate) unsafe fn held_past_the_outermost_call(&self) -> bool {
        // SAFETY: forwarded caller obligation.
        unsafe { self.locals.held_past_the_outermost_call(&self.stack) }
    }

    /// Records that the owner, `thread` (its `thread::id`), releases the
    /// `#[local]` values; 0 when done.
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
