//! The straight line: what a trampoline runs inline, from the thread's slot
//! to the body's result, when it finds a context it can run on.
//!
//! Its shape is what keeps a call cheap, and the compiler keeps it only
//! while these hold:
//!
//! - the straight line starts on a 64-byte boundary and fits in one
//!   instruction-fetch line ([`align_to_fetch_line`]);
//! - the trampoline sets up no frame on it: everything that needs one goes
//!   to one out-of-line function, called from one place (`call_cold`,
//!   `call_local_cold`), whose only use of the trampoline's frame is the
//!   anchor;
//! - reaching the slot stands for the init gate ([`Slot::fast`]).

use core::marker::PhantomData;

use super::outcome::{conclude, run};
use super::site::{Frame, Site};
use super::slow::{call_cold, call_local_cold, call_slow};
use crate::context::ContextNode;
use crate::failure::Failure;
use crate::local::{Local, LocalKey, LocalRef};
use crate::settings::AttachMode;
use crate::stack::Anchor;
use crate::thread;
use crate::tls::Slot;

/// Runs one callback at the boundary.
///
/// `on_error` is returned (unless the site's policy aborts) when the gate is
/// shut, an argument is bad or the body returns `Err`; `on_panic` when the
/// body panics. The failure's message becomes the thread's last error.
/// `site` lives as long as the call: a trampoline's is a `static`, a
/// closure's is in the closure's allocation.
#[hot_path]
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

/// The thread's slot value as the fast path sees it, and the slot where
/// it reached it ([`Slot::fast`]): null (never [`thread::serves`]) and
/// `None` while the fast path is closed.
#[hot_path]
fn fast_slot(site: &Site) -> (*const ContextNode, Option<Slot>) {
    let slot = Slot::fast(|| site.passes_gate());
    (slot.as_ref().map_or(core::ptr::null(), Slot::get), slot)
}

/// The bound fast path's call on `node`, the context bound to the thread:
/// enters it and runs the call, or takes the slow path if a call is
/// recorded as running on it.
///
/// # Safety
///
/// `node` serves the calling thread (a slot value that `thread::serves`
/// accepts); `anchor` is in the frame of the trampoline making the call.
#[hot_path]
pub(super) unsafe fn bound_on<R>(
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
#[hot_path]
pub(super) unsafe fn per_call_on<R>(
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

/// Runs a call that `Context::enter_outermost` started on `node`: the
/// body, `leave_outermost`, then `release` (what the attachment needs once
/// the call has left), and the outcome.
///
/// # Safety
///
/// `node` serves the calling thread, and the calling trampoline's call
/// entered it with `Context::enter_outermost` and has not left it.
#[hot_path]
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
#[hot_path]
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
/// `call_local_cold`.
///
/// # Safety
///
/// `anchor` is in the frame of the trampoline making the call.
#[hot_path]
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
    // One call to one out-of-line function for whatever the fast path
    // cannot serve, as for `call_cold`.
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
/// dropped as on the bound fast path.
///
/// `#[inline]`, not `inline(always)`: inlined before its callees, the body
/// would still reach the value through `catch_unwind`'s data in memory,
/// and the compiler could not tell that its accesses are the parameter's.
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

/// Starts the function this is inlined into (a trampoline) on a 64-byte
/// boundary where the build can, so that its straight line sits in one
/// instruction-fetch line wherever the linker puts it.
///
/// It emits no instruction: it aligns *subsection 1* of the function's
/// section, which gives the section (one per function) that alignment,
/// and the padding lands in subsection 1, after the code, never executed.
/// ELF x86-64 and aarch64 Linux only; elsewhere functions keep the
/// compiler's alignment.
#[inline(always)]
fn align_to_fetch_line() {
    align_function::<6>();
}

/// Starts the function this is inlined into on a `2^LOG2`-byte boundary,
/// as [`align_to_fetch_line`] does (which see).
#[inline(always)]
pub(super) fn align_function<const LOG2: u32>() {
    #[cfg(all(
        any(target_arch = "x86_64", target_arch = "aarch64"),
        target_os = "linux",
        not(miri)
    ))]
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
