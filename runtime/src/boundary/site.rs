//! What a trampoline hands the boundary: its [`Site`], and the [`Frame`]
//! its body gets.

use core::marker::PhantomData;

use crate::context::ContextNode;
use crate::failure::Failure;
use crate::gate::GatePolicy;
use crate::init;
use crate::local::{Local, LocalKey, LocalRef};
use crate::settings::AttachMode;
use crate::stack::{Anchor, Mark};
use crate::thread;

/// What a callback does when its call fails (`on_error`) or panics
/// (`on_panic`): `on_panic = abort` and `on_error = abort` choose
/// [`Abort`](OnFailure::Abort).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Record the message and return the declared fallback value.
    Return,
    /// Print the message, naming the callback, and abort the process.
    Abort,
}

/// The static description of one callback, built by `#[c_callback]`.
#[derive(Debug)]
pub struct Site {
    /// The Rust name of the callback, used in messages.
    pub name: &'static str,
    /// How the thread is attached.
    pub attach: AttachMode,
    /// What to do while initialisation is pending.
    pub gate: GatePolicy,
    /// What to do when the body panics.
    pub on_panic: OnFailure,
    /// What to do on `Err`, a bad argument or a failed init.
    pub on_error: OnFailure,
}

impl Site {
    /// True when a call from this site may go on: it skips the gate, or
    /// the gate is open.
    #[hot_path]
    pub(super) fn passes_gate(&self) -> bool {
        self.gate == GatePolicy::Skip || init::GATE.is_ready()
    }
}

/// The mark of the thread `node` serves: the context's address, a
/// multiple of its alignment (128).
#[hot_path]
pub(crate) fn thread_mark(node: &ContextNode) -> usize {
    core::ptr::from_ref(node).addr()
}

/// The calling thread's context, handed to the body of a callback.
pub struct Frame {
    pub(super) node: &'static ContextNode,
    /// The depth this call runs at.
    pub(super) depth: u32,
    /// The anchor in the trampoline's frame: its mark identifies the call
    /// to a `#[local]` value it holds (see `Locals::get`).
    pub(super) anchor: *const Anchor,
    /// Tied to the thread: a frame never leaves the call it was made for.
    pub(super) _not_send: PhantomData<*const ()>,
}

impl Frame {
    /// A non-zero number unique to the calling thread among the threads
    /// running callbacks: [`thread_mark`] of the context serving it.
    #[hot_path]
    pub(crate) fn thread_mark(&self) -> usize {
        thread_mark(self.node)
    }

    /// This call's mark, for something it takes and may keep past its
    /// frame (a `Closure::new` turn) to record it by (see
    /// [`marked_call_is_gone`]).
    #[hot_path]
    pub(crate) fn mark(&self) -> Mark {
        // SAFETY: frames exist only inside `call`, for a call that entered
        // with `anchor`, which lives until the call returns (see `local`).
        unsafe { (*self.anchor).current_mark() }
    }

    /// This thread's `T` for a `#[local]` parameter, found through `key`
    /// (the callback's own), or an error if an outer call on this thread is
    /// already using it.
    #[hot_path]
    pub fn local<T: Local>(&self, key: &LocalKey<T>) -> Result<LocalRef<'_, T>, Failure> {
        // SAFETY: frames exist only inside `call` on the thread the context
        // serves (`Frame` is neither `Send` nor `Sync`), for a call that
        // entered at `depth` and whose anchor, in the trampoline's frame,
        // lives until the call returns.
        unsafe { self.node.value.local(key, self.depth, &*self.anchor) }
    }
}

/// True when the call marked `holder` ([`Frame::mark`]), which holds
/// something under this thread's mark, certainly has no frame left, as
/// `Context::holder_is_gone` decides. Asked only from the thread's
/// outermost call: a nested one (a signal handler's) may have interrupted
/// the holder.
///
/// # Safety
///
/// Called from inside a call on this thread; `holder` is the mark of a
/// call made on the context serving this thread (by a call of this thread,
/// or of a thread that had its context before, which handed it on through
/// the free list).
#[cold]
pub(crate) unsafe fn marked_call_is_gone(holder: Mark) -> bool {
    let Some(node) = thread::current() else {
        return false;
    };
    // SAFETY: `node` serves this thread, its owner; at depth 1 the asking
    // call is its outermost running call; `holder` marks a call made on it
    // (caller obligation).
    unsafe { node.value.depth() == 1 && node.value.holder_is_gone(holder) }
}
