//! The boundary itself: what every generated trampoline runs.
//!
//! [`call`] passes the gate, attaches the thread, runs the body under
//! `catch_unwind` and turns an `Err` or a panic into the declared fallback
//! plus a last-error message. It is `#[inline(always)]` and generic, so the
//! trampoline compiles to the fast path inline; everything that only runs
//! when something goes wrong is `#[cold]` and out of line. At
//! `opt-level = 0` (`cfg(callgate_unoptimized)`, set by the build script)
//! nothing is forced inline: unoptimised code keeps every inlined
//! function's locals apart in the caller's frame, and forcing the call path
//! inline made a nested callback's frames about three times larger.

use core::any::Any;
use core::fmt::Display;
use core::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::context::ContextNode;
use crate::diag;
use crate::failure::{Failure, payload_message};
use crate::gate::{Closed, GatePolicy};
use crate::local::{Local, LocalKey, LocalRef};
use crate::settings::{self, AttachMode, PanicMode};
use crate::stack::{Anchor, Mark};
use crate::tls::Slot;
use crate::{init, last_error, stats, thread};

/// What to do with a failure (`on_panic = abort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
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
    pub on_panic: Policy,
    /// What to do on `Err`, a bad argument or a failed init.
    pub on_error: Policy,
}

/// The calling thread's context, handed to the body of a callback.
pub struct Frame {
    node: &'static ContextNode,
    /// The depth this call runs at.
    depth: u32,
    /// The anchor in the trampoline's frame: its mark identifies the call
    /// to a `#[local]` value it holds (see `Locals::get`).
    anchor: *const Anchor,
    /// Tied to the thread: a frame never leaves the call it was made for.
    _not_send: PhantomData<*const ()>,
}

impl Frame {
    /// A non-zero number unique to the calling thread among the threads
    /// running callbacks: the address of the context serving it, which
    /// serves one thread at a time and the same one through the call and
    /// every call nested in it.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn thread_mark(&self) -> usize {
        core::ptr::from_ref(self.node).addr()
    }

    /// This call's mark, for something it takes and may keep past its
    /// frame (a `Closure::new` turn) to record it by (see
    /// [`marked_call_is_gone`]).
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn mark(&self) -> Mark {
        // SAFETY: frames exist only inside `call`, for a call that entered
        // with `anchor`, which lives until the call returns (see `local`).
        unsafe { (*self.anchor).current_mark() }
    }

    /// This thread's `T` for a `#[local]` parameter, found through `key`
    /// (the callback's own), or an error if an outer call on this thread is
    /// already using it.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub fn local<T: Local>(&self, key: &LocalKey<T>) -> Result<LocalRef<'_, T>, Failure> {
        // SAFETY: frames exist only inside `call` on the thread the context
        // serves (`Frame` is neither `Send` nor `Sync`), for a call that
        // entered at `depth` and whose anchor, in the trampoline's frame,
        // lives until the call returns.
        unsafe { self.node.value.local(key, self.depth, &*self.anchor) }
    }
}

/// For a call of this thread that finds something held under its own
/// thread's mark by the call marked `holder` ([`Frame::mark`]): true
/// when the asking call is its thread's outermost one and that call
/// certainly has no frame left: it ran before the context last changed
/// hands (its thread exited or gave the context up with its calls over),
/// or it was on the thread's own stack below the asking call, or its
/// frame's memory was reused (see `Context::holder_is_gone`). A call on
/// another stack of the thread (a coroutine's) may be suspended there, and
/// is not; nor is one a nested asking call (a signal handler's, say) may
/// have interrupted.
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

/// Wraps a plain return value for [`call`]'s body.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub fn ok<T>(value: T) -> Result<T, Failure> {
    Ok(value)
}

/// Turns the callback's `Result` into [`call`]'s body result; the error's
/// `Display` text becomes the last error.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub fn from_result<T, E: Display>(result: Result<T, E>) -> Result<T, Failure> {
    result.map_err(|error| Failure::from_display(&error))
}

/// Runs one callback at the boundary.
///
/// `on_error` is returned (unless the site's policy aborts) when the gate is
/// shut, an argument is bad or the body returns `Err`; `on_panic` when the
/// body panics. The failure's message becomes the thread's last error.
/// `site` lives as long as the call: a trampoline's is a `static`, a
/// closure's is in the closure's allocation.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub fn call<R>(
    site: &Site,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    align_to_fetch_line();
    // The fast path: a bound thread with no call running.
    let (bound, slot) = fast_slot(site);
    // In this frame whichever path the call takes: a call that follows
    // one abandoned from the same place writes its token over the
    // abandoned call's (see `stack`).
    let anchor = Anchor::new();
    if thread::serves(bound) {
        // SAFETY: a slot value that `serves` accepts is a node of
        // `CONTEXTS` serving this thread, alive until the library is
        // unloaded.
        let node: &'static ContextNode = unsafe { &*bound };
        // SAFETY: `node` serves this thread, which owns it.
        if unsafe { node.value.is_idle() } {
            // SAFETY: `node` serves this thread and is idle; `anchor` is in
            // this call's frame.
            unsafe { node.value.enter_idle(&anchor) };
            // SAFETY: entered just above. `node` is not a per-call context
            // (see `Context::leave_outermost`), so it stays bound: nothing
            // to release.
            return unsafe { outermost(site, node, &anchor, on_error, on_panic, body, || {}) };
        }
    } else if site.attach == AttachMode::PerCall && !bound.is_null() {
        // The per-call fast path: the context this thread's last per-call
        // attach cached, taken and cached again without touching the free
        // list. (Null caches nothing; testing it here keeps the cold call
        // on the straight line's fall-through.)
        if let Some(slot) = &slot {
            if let Some(node) = thread::take_cached(slot, bound) {
                let release = || {
                    // SAFETY: the call that attached `node` per call is
                    // returning: it gives it up, and no call runs on it any
                    // more; `slot` is this thread's.
                    unsafe { thread::release_cached(slot, node) }
                };
                // SAFETY: `node` was just taken from the cache on this
                // thread; `anchor` is in this call's frame.
                return unsafe {
                    per_call_on(site, node, &anchor, release, on_error, on_panic, body)
                };
            }
        }
    }
    // Every other call, from this one place: only here does the trampoline
    // need a frame of its own (see `call_cold`).
    call_cold(site, &anchor, on_error, on_panic, body)
}

/// The bound fast path's call on `node`, the context bound to the thread:
/// enters it and runs the call, or takes the slow path if a call is
/// recorded as running on it.
///
/// # Safety
///
/// `node` serves the calling thread (a slot value that `thread::serves`
/// accepts); `anchor` is in the frame of the trampoline making the call.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn bound_on<R>(
    site: &Site,
    node: &'static ContextNode,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    // SAFETY:
    // - `node` serves this thread, and only this thread releases it;
    // - `anchor` is in the trampoline's frame and lives until the end of
    //   the call (caller obligations).
    if !unsafe { node.value.enter_outermost(anchor) } {
        return call_slow(site, anchor, on_error, on_panic, body);
    }
    // SAFETY: entered just above. `node` is not a per-call context (see
    // `Context::leave_outermost`), so it stays bound: nothing to release.
    unsafe { outermost(site, node, anchor, on_error, on_panic, body, || {}) }
}

/// The per-call fast path's call on `node`, the context it just took from
/// the thread's cache: enters it, runs the call and caches it again with
/// `release`.
///
/// # Safety
///
/// `node` serves the calling thread, which took it from its cache for this
/// call; `anchor` is in the frame of the trampoline making the call;
/// `release` gives `node` up as `thread::release_cached` does.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn per_call_on<R>(
    site: &Site,
    node: &'static ContextNode,
    anchor: &Anchor,
    release: impl FnOnce(),
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    // SAFETY: `node` serves this thread now (it was claimed from the
    // cache), and only this thread releases it; `anchor` is in the
    // trampoline's frame (caller obligations). A cached context has no
    // call running, so this succeeds; were it not to, the slow path finds
    // `node` bound and releases it.
    if unsafe { node.value.enter_outermost(anchor) } {
        // SAFETY: entered just above; `release` gives `node` up (caller
        // obligation).
        return unsafe { outermost(site, node, anchor, on_error, on_panic, body, release) };
    }
    call_slow(site, anchor, on_error, on_panic, body)
}

/// Every call the trampoline's fast paths do not serve: in dynamic TLS
/// (see [`dynamic_slot`]), and where a callback served on a bound thread
/// found null, [`call_unbound`]; else (a nested call, a per-call call with
/// no context cached or with the fast path closed) the slow path.
///
/// The trampoline calls it from one place: the anchor it passes is the
/// only use of the trampoline's frame, so where the body reaches nothing
/// that needs the call's records (see `context::Running`), the compiler
/// sets the frame up on this path only, and the fast path has none. It
/// only chooses, so that its own frame stays small in a debug build,
/// where every nested call passes through it.
///
/// Out of line and `extern "C"` (it cannot unwind: the body runs under
/// `catch_unwind`), as [`call_slow`] is, so the trampoline's fast paths
/// keep their code, and the call to it needs no landing pad.
#[cold]
#[inline(never)]
// Never called from C: the parameters are Rust values passed between two
// Rust functions compiled together.
#[allow(improper_ctypes_definitions)]
extern "C" fn call_cold<R>(
    site: &Site,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    let slot = match Slot::dynamic(site.gate == GatePolicy::Skip) {
        Some(slot) => Some(slot),
        // The slot read at its static offset holds null on a bound site:
        // an unbound thread's first call.
        None if site.attach == AttachMode::Bound && slot_read_null(site) => None,
        None => return call_slow(site, anchor, on_error, on_panic, body),
    };
    call_unbound(site, anchor, slot, on_error, on_panic, body)
}

/// A call whose fast path's read of the slot found no context to run on:
/// in dynamic TLS, `slot` is the slot found through the descriptor; else
/// `None`, for a callback served on a bound thread whose static read found
/// null. Runs the bound or per-call fast path on what the slot holds, or
/// on what [`bind_first`] binds for an unbound thread's first call from a
/// callback served on a bound thread; else the slow path.
///
/// `extern "C"`, as [`call_slow`] is. Inlined into [`call_cold`] in an
/// optimised build (one call on this path, as before `call_cold` was
/// split off); out of line at `opt-level = 0`, as the whole call path is
/// there (`cfg(callgate_unoptimized)`), where `call_cold`'s frame would
/// otherwise hold this path's and every nested call would carry it.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
// Never called from C: the parameters are Rust values passed between two
// Rust functions compiled together.
#[allow(improper_ctypes_definitions)]
extern "C" fn call_unbound<R>(
    site: &Site,
    anchor: &Anchor,
    slot: Option<Slot>,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    let mut value = slot.as_ref().map_or(core::ptr::null(), Slot::get);
    if site.attach == AttachMode::Bound && value.is_null() {
        // SAFETY: the slot held null when read just now (`call_cold`'s
        // static read or the descriptor's slot).
        value = unsafe { bind_first(site) };
    }
    if thread::serves(value) {
        // SAFETY: a slot value that `serves` accepts (or one `bind_first`
        // returned, which it accepts) is a node of `CONTEXTS` serving this
        // thread; `anchor` is in the trampoline's frame (it passed it
        // here).
        return unsafe { bound_on(site, &*value, anchor, on_error, on_panic, body) };
    }
    // Nested rather than a `let` chain: those need Rust 1.88, and the
    // crate builds with 1.85 (`rust-version`).
    if site.attach == AttachMode::PerCall {
        if let Some(slot) = &slot {
            if let Some(node) = thread::take_cached(slot, value) {
                let release = || {
                    // SAFETY: the call that attached `node` per call is
                    // returning: it gives it up, and no call runs on it
                    // any more; `slot` is this thread's.
                    unsafe { thread::release_cached(slot, node) }
                };
                // SAFETY: `node` was just taken from the cache on this
                // thread; `anchor` is in the trampoline's frame.
                return unsafe {
                    per_call_on(site, node, anchor, release, on_error, on_panic, body)
                };
            }
        }
    }
    call_slow(site, anchor, on_error, on_panic, body)
}

/// Runs a call that `Context::enter_outermost` started on `node`: the
/// body, `leave_outermost`, then `release` (what the attachment needs once
/// the call has left), and the outcome.
///
/// # Safety
///
/// `node` serves the calling thread, and the calling trampoline's call
/// entered it with `Context::enter_outermost` and has not left it.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn outermost<R>(
    site: &Site,
    node: &'static ContextNode,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
    release: impl FnOnce(),
) -> R {
    let frame = Frame {
        node,
        depth: 1,
        anchor,
        _not_send: PhantomData,
    };
    let outcome = run(site, &frame, body);
    if let Ok(Ok(value)) = outcome {
        // SAFETY: `node` serves this thread, and the call entered with
        // `enter_outermost` and has not left (caller obligations).
        unsafe { node.value.leave_outermost() };
        release();
        return value;
    }
    conclude(site, node, outcome, on_error, on_panic, || {
        // SAFETY: as above.
        unsafe { node.value.leave_outermost() };
        release();
    })
}

/// [`call`] for a callback with one `#[local]` parameter: `body` gets the
/// value of `key`'s type besides the frame.
///
/// The fast path finds the value ready (it exists, is bound to the thread
/// and no call holds it) before the call starts, and holds it for the
/// call; anything else — a first use, `bind`, a value an outer call
/// holds — goes to the slow path, which looks it up as [`Frame::local`]
/// does. A miss never returns into the fast path, so the trampoline keeps
/// nothing in registers across a call there.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub fn call_local<R, T: Local>(
    site: &Site,
    key: &'static LocalKey<T>,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame, LocalRef<'_, T>) -> Result<R, Failure>,
) -> R {
    align_to_fetch_line();
    let (bound, _) = fast_slot(site);
    let anchor = Anchor::new();
    // SAFETY: `anchor` is in this call's frame.
    unsafe { local_on(site, key, bound, &anchor, on_error, on_panic, body) }
}

/// The `#[local]` fast path from the slot's value `bound`; else
/// [`call_local_cold`].
///
/// # Safety
///
/// `anchor` is in the frame of the trampoline making the call.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
#[allow(clippy::too_many_arguments, reason = "call_local's, passed on")]
unsafe fn local_on<R, T: Local>(
    site: &Site,
    key: &'static LocalKey<T>,
    bound: *const ContextNode,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame, LocalRef<'_, T>) -> Result<R, Failure>,
) -> R {
    // Whatever the fast path cannot serve goes to one call, to one
    // out-of-line function (as `call_cold` is, for the same reason): one
    // call in the code, so that the frame it needs is set up on that path
    // only.
    let ready = 'ready: {
        if !thread::serves(bound) {
            break 'ready None;
        }
        // SAFETY: a slot value that `serves` accepts is a node of
        // `CONTEXTS` serving this thread, alive until the library is
        // unloaded.
        let node: &'static ContextNode = unsafe { &*bound };
        // SAFETY: `node` serves this thread, which owns it.
        if !unsafe { node.value.is_idle() } {
            break 'ready None;
        }
        // SAFETY: as above; the value is for the call that starts right
        // after on the idle context.
        unsafe { node.value.locals.get_ready(key) }.map(|(entry, value)| (node, entry, value))
    };
    match ready {
        // SAFETY: `node` serves this thread and is idle; `anchor` is in the
        // trampoline's frame (caller obligation); `entry` holds the index
        // of `value`, a free value of `node`'s that nothing else refers
        // to: the call holds it until it leaves.
        Some((node, entry, value)) => unsafe {
            outermost_holding(
                site,
                node,
                anchor,
                entry,
                &mut *value,
                on_error,
                on_panic,
                body,
            )
        },
        None => call_local_cold(site, key, anchor, on_error, on_panic, body),
    }
}

/// The `#[local]` fast path's call on `node` with `value`, the free value
/// whose index `entry` holds: enters, runs the call and leaves.
///
/// `value` comes as a parameter so that the compiler knows nothing else
/// the call does here reaches it: the context's stores that a body
/// reaching nothing else cannot read (see `context::Running`) are then
/// dropped as on the bound fast path, the body's use of the value
/// notwithstanding.
///
/// `#[inline]`, not `inline(always)`: an always-inlined function is
/// inlined before the functions it calls are, while the body still reaches
/// the value through `catch_unwind`'s data in memory, and the compiler can
/// then not tell that the body's accesses are the parameter's. Inlined
/// after them, it can. The compiler inlines it into the trampoline (the
/// benchmark's, the test fixture's and the examples' builds have no copy
/// of it out of line).
///
/// # Safety
///
/// `node` serves the calling thread and is idle; `anchor` is in the frame
/// of the trampoline making the call; `entry` is the entry word of
/// `value`'s index (`Locals::get_ready`).
#[inline]
#[allow(clippy::too_many_arguments, reason = "call_local's, passed on")]
unsafe fn outermost_holding<R, T: Local>(
    site: &Site,
    node: &'static ContextNode,
    anchor: &Anchor,
    entry: u64,
    value: &mut T,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame, LocalRef<'_, T>) -> Result<R, Failure>,
) -> R {
    // SAFETY: `node` serves this thread and is idle, `anchor` is in the
    // trampoline's frame (caller obligations); the call holds `entry`'s
    // value until it leaves (the `LocalRef` does nothing when dropped).
    unsafe { node.value.enter_idle_holding(anchor, entry) };
    let body = move |frame: &Frame| body(frame, LocalRef::held_by_call(value));
    // SAFETY: entered just above; `node` is not a per-call context (see
    // `Context::leave_outermost`), so there is nothing to release.
    unsafe { outermost(site, node, anchor, on_error, on_panic, body, || {}) }
}

/// Every `#[local]` call the trampoline's fast path does not serve (which
/// reads the slot in dynamic TLS too, see [`fast_slot`]): the slow path.
/// Out of line, `extern "C"` and called from one place, as [`call_cold`]
/// is.
#[cold]
#[inline(never)]
// Never called from C: the parameters are Rust values passed between two
// Rust functions compiled together.
#[allow(improper_ctypes_definitions)]
extern "C" fn call_local_cold<R, T: Local>(
    site: &Site,
    key: &'static LocalKey<T>,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame, LocalRef<'_, T>) -> Result<R, Failure>,
) -> R {
    call_slow_local(site, key, anchor, on_error, on_panic, body)
}

/// [`call_slow`] for a callback with one `#[local]` parameter: the body
/// looks the value up as [`Frame::local`] does.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn call_slow_local<R, T: Local>(
    site: &Site,
    key: &'static LocalKey<T>,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame, LocalRef<'_, T>) -> Result<R, Failure>,
) -> R {
    call_slow(site, anchor, on_error, on_panic, move |frame| {
        let local = frame.local(key)?;
        body(frame, local)
    })
}

/// The thread's slot value as the fast path sees it, and the slot where
/// it reached it ([`Slot::fast`]): null (never [`thread::serves`]) and
/// `None` while the fast path is closed.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn fast_slot(site: &Site) -> (*const ContextNode, Option<Slot>) {
    let slot = Slot::fast(|| passes_gate(site));
    (slot.as_ref().map_or(core::ptr::null(), Slot::get), slot)
}

/// True when the slot, reached without a call, holds null: the calling
/// thread is not bound. False where that read is not made: the fast path
/// is closed, or the slot is in dynamic TLS.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn slot_read_null(site: &Site) -> bool {
    Slot::without_call(|| passes_gate(site)).is_some_and(|slot| slot.get().is_null())
}

/// True when a call from `site` may go on: it skips the gate, or the gate
/// is open.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn passes_gate(site: &Site) -> bool {
    site.gate == GatePolicy::Skip || init::GATE.is_ready()
}

/// The context bound to the calling thread, for a call from `site` about
/// to start there (a closure's call, taking its hold before `call`): an
/// unbound thread is bound first, as its first call would bind it
/// ([`bind_first`]). The context returned stays with the thread until the
/// thread exits. `None` where the thread is attached per call (its
/// context goes back to the pool when the outermost call returns), after
/// its exit hook ran, or cannot be bound now (the gate is shut).
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn bound_context(site: &Site) -> Option<&'static ContextNode> {
    let mut value = thread::slot();
    if value.is_null() && site.attach == AttachMode::Bound {
        crate::hint::rarely_taken();
        // SAFETY: the slot held null when read just now.
        value = unsafe { bind_first(site) };
    }
    if !thread::serves(value) {
        return None;
    }
    // SAFETY: a slot value that `serves` accepts (or one `bind_first`
    // returned, which it accepts) is a node of `CONTEXTS` serving this
    // thread, freed only when the library is unloaded.
    let node: &'static ContextNode = unsafe { &*value };
    // SAFETY: `node` serves this thread, its owner.
    (!unsafe { node.value.per_call() }).then_some(node)
}

/// For [`call_unbound`], whose read of the slot found null: the context
/// it binds to the calling thread now, for a call from `site` (a callback
/// served on a bound thread) to run on as the bound fast path does. Null
/// where the slow path has more to do: the gate is shut, or the thread
/// would be served per call. (Where a nested call, a signal handler's,
/// bound the thread since the read, it is that call's context, which
/// [`bound_on`] runs on or sends to the slow path.)
///
/// A thread's first call then runs the trampoline, [`call_cold`], this
/// and `pthread_setspecific` (or `FlsSetValue`), not [`call_slow`] and
/// [`arrive`] besides, which lie elsewhere in the binary: on a thread
/// that just started, each page of code the call runs may cost a TLB miss
/// (a page walk, two-dimensional in a virtual machine) that the
/// instruction fetch waits for. Not generic, so one copy serves every
/// callback, and aligned to 1 KiB, so that its 0.8 KiB on x86-64 do not
/// straddle two pages.
///
/// # Safety
///
/// The calling thread's slot held null when this thread last read it, and
/// this thread has not called into the runtime since.
#[cold]
#[inline(never)]
unsafe extern "C" fn bind_first(site: &Site) -> *const ContextNode {
    align_function::<10>();
    if !passes_gate(site) {
        return core::ptr::null();
    }
    init::open_fast_path();
    // SAFETY: the slot held null (caller obligation).
    unsafe { thread::bind_unbound() }.map_or(core::ptr::null(), core::ptr::from_ref)
}

/// Starts the function this is inlined into (a trampoline) on a 64-byte
/// boundary, where the build can: its fast path (64 bytes of
/// straight-line code for an `int (int)` callback on x86-64) then sits in
/// one instruction-fetch line wherever the linker puts the function.
///
/// It emits no instruction. It aligns *subsection 1* of the section the
/// function's code is in to 64 bytes: the assembler gives a section the
/// largest alignment requested in it, and the linker keeps an input
/// section's alignment; the padding itself lands in subsection 1, which
/// is laid out after the function's code (subsection 0), so it is never
/// executed. Each function has a section of its own (rustc's
/// `-Z function-sections` default), so this aligns the trampoline. ELF
/// x86-64 Linux only; elsewhere functions keep the compiler's alignment.
#[inline(always)]
fn align_to_fetch_line() {
    align_function::<6>();
}

/// Starts the function this is inlined into on a `2^LOG2`-byte boundary,
/// as [`align_to_fetch_line`] does (which see).
#[inline(always)]
fn align_function<const LOG2: u32>() {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    // SAFETY: assembler directives only: no instruction, no register, no
    // memory, no flags, no stack; the current subsection is restored.
    unsafe {
        core::arch::asm!(
            ".subsection 1",
            ".p2align {log2}",
            ".subsection 0",
            log2 = const LOG2,
            options(nomem, nostack, preserves_flags)
        );
    }
}

/// Every call that is not a fast path's: the gate is shut or not looked
/// at yet, the thread is not bound (or is served per call with nothing
/// cached), or a call is recorded as running on it (a nested call, or one
/// abandoned). In dynamic TLS, the trampolines' fast paths read the slot
/// through the descriptor ([`fast_slot`]), and [`call_unbound`] serves a
/// per-call call with a context cached, sending only those cases here.
///
/// `extern "C"`, so it cannot unwind (a Rust panic in it aborts, but its
/// body runs under `catch_unwind`): the trampoline's call to it then needs
/// no unwind-table entry, and an unwind that is not a Rust panic — a
/// forced unwind, a foreign exception — thrown by C code the body called
/// passes the trampoline's frame as it passes this one, instead of
/// meeting the abort that guards calls which may unwind.
#[cold]
#[inline(never)]
// Never called from C: the parameters are Rust values passed between two
// Rust functions compiled together.
#[allow(improper_ctypes_definitions)]
extern "C" fn call_slow<R>(
    site: &Site,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    let node = match thread::current() {
        // Bound, past the gate: a nested or abandoned call, a `#[local]`
        // value not ready, or a call before the fast path opened.
        Some(node) if passes_gate(site) => {
            init::open_fast_path();
            node
        }
        _ => match arrive(site) {
            Ok(node) => node,
            Err(failure) => return failed(site, *failure, on_error),
        },
    };
    // SAFETY:
    // - `node` serves this thread: `current` or `arrive` just returned it
    //   here, and only this thread's own `leave` below can release it;
    // - `anchor` is in the frame of the trampoline that called this, and
    //   lives until this returns.
    let start = unsafe { node.value.enter(anchor) };
    let frame = Frame {
        node,
        depth: start + 1,
        anchor,
        _not_send: PhantomData,
    };
    let outcome = run(site, &frame, body);
    conclude(site, node, outcome, on_error, on_panic, || {
        // SAFETY:
        // - `node` still serves this thread: a nested call releases the
        //   context only as the outermost one;
        // - `enter` above started this call at `start`, and it has not
        //   left;
        // - `conclude` does not use `node` after this, which may release
        //   it.
        unsafe { thread::leave(node, start) }
    })
}

/// Runs the body under `catch_unwind`, with the guard that names the
/// callback if a foreign unwind reaches a landing pad here.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn run<R>(
    site: &Site,
    frame: &Frame,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> std::thread::Result<Result<R, Failure>> {
    catch_unwind(AssertUnwindSafe(|| {
        let guard = ForeignUnwind(site);
        let result = body(frame);
        core::mem::forget(guard);
        result
    }))
}

/// Ends a call on `node`: counts an `Err` or a panic while the context
/// is still this thread's, runs `leave` (which may release it) and turns
/// the outcome into the call's result. One `match`, so the value of a
/// successful call goes straight out.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn conclude<R>(
    site: &Site,
    node: &ContextNode,
    outcome: std::thread::Result<Result<R, Failure>>,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    leave: impl FnOnce(),
) -> R {
    match outcome {
        Ok(Ok(value)) => {
            leave();
            value
        }
        Ok(Err(failure)) => {
            node.value.errors.bump();
            leave();
            failed(site, failure, on_error)
        }
        Err(payload) => {
            node.value.panics.bump();
            leave();
            panicked(site, payload, on_panic)
        }
    }
}

/// Dropped only when something unwinds out of a callback's body: a Rust
/// panic (caught right after, so nothing to do), or an unwind that is not
/// a Rust panic — a forced unwind (`pthread_exit`, a cancellation acted
/// on) or a foreign (C++) exception thrown by C code the body called.
/// Where such an unwind reaches a landing pad here, it cannot be caught
/// (a forced unwind must not stop; Rust cannot catch foreign exceptions),
/// so the process aborts with a message naming the callback. Where the
/// compiler dropped the landing pads (the body's C calls are `extern "C"`,
/// which cannot unwind, so an optimised build often has none), the unwind
/// passes through without running anything, and the runtime recovers the
/// abandoned call later (see `stack`).
struct ForeignUnwind<'a>(&'a Site);

impl Drop for ForeignUnwind<'_> {
    // Inline, so the landing pad names the site directly and the fast path
    // spends no store keeping the guard in memory.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn drop(&mut self) {
        foreign_unwind(self.0);
    }
}

#[cold]
#[inline(never)]
fn foreign_unwind(site: &Site) {
    if !std::thread::panicking() {
        diag::abort_with(&format!(
            "callgate: a forced unwind (pthread_exit, pthread_cancel) or a foreign exception is \
             unwinding through callback `{}`; aborting",
            site.name
        ));
    }
}

/// The slow start of a call: passes the gate, opens the fast path once
/// the gate is open, and attaches the thread if it is not bound. The
/// failure of a gate that stays shut is boxed, so the result fits in two
/// registers and the fast path needs no stack for it.
#[cold]
#[inline(never)]
fn arrive(site: &Site) -> Result<&'static ContextNode, Box<Failure>> {
    if !passes_gate(site) {
        if let Err(failure) = pass_gate(site) {
            stats::record_error_outside_call();
            return Err(Box::new(failure));
        }
    }
    init::open_fast_path();
    Ok(match thread::current() {
        Some(node) => node,
        None => thread::attach(site.attach),
    })
}

#[cold]
#[inline(never)]
fn pass_gate(site: &Site) -> Result<(), Failure> {
    init::pass_gate_slow(site.name, site.gate).map_err(|closed| match closed {
        Closed::Failed(message) => Failure::new(format!("initialisation failed: {message}")),
        Closed::Pending => Failure::new(format!(
            "`{}` was called before initialisation finished (gate = fail)",
            site.name
        )),
    })
}

#[cold]
#[inline(never)]
fn failed<R>(site: &Site, failure: Failure, on_error: impl FnOnce() -> R) -> R {
    let message = failure.into_message();
    if site.on_error == Policy::Abort {
        diag::abort_with(&format!(
            "callgate: callback `{}` failed: {message}; aborting",
            site.name
        ));
    }
    last_error::set_last_error(message);
    on_error()
}

#[cold]
#[inline(never)]
fn panicked<R>(site: &Site, payload: Box<dyn Any + Send>, on_panic: impl FnOnce() -> R) -> R {
    let message = payload_message(payload);
    if site.on_panic == Policy::Abort || settings::current().panic == PanicMode::Abort {
        diag::abort_with(&format!(
            "callgate: callback `{}` panicked: {message}; aborting",
            site.name
        ));
    }
    last_error::set_last_error(format!("callback `{}` panicked: {message}", site.name));
    on_panic()
}
