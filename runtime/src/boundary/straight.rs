//! The straight line: what a trampoline runs inline, from the thread's slot
//! to the body's result, when it finds a context it can run on.
//!
//! The compiler keeps it cheap only while these hold:
//!
//! - the straight line starts on a 64-byte boundary and, for an
//!   `int (int)` callback, fits in one instruction-fetch line
//!   ([`align_to_fetch_line`]);
//! - the trampoline sets up no frame on it where the body reaches nothing
//!   that needs the call's records: everything that needs one goes to one
//!   out-of-line function, called from one place (`call_cold`,
//!   `call_local_cold`), whose only use of the trampoline's frame is the
//!   anchor;
//! - reaching the slot stands for the init gate ([`Slot::fast`]).
//!
//! `tests/codegen` checks these on the benchmark fixture's release build.

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
/// body panics; the message becomes the thread's last error. `site` lives
/// as long as the call.
#[hot_path]
pub fn call<R>(
    site: &Site,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    align_to_fetch_line();
    // SAFETY: just read.
    unsafe { call_from(site, fast_slot(site), on_error, on_panic, body) }
}

/// [`call`] from the slot as its caller read it with [`fast_slot`] (a
/// closure's, which announces the closure on the context it found there).
///
/// # Safety
///
/// `read` is what `fast_slot(site)` returned on this thread, with no call
/// of the thread started or ended since but calls that left the slot as
/// they found it (a signal handler's).
#[hot_path]
pub(crate) unsafe fn call_from<R>(
    site: &Site,
    read: (*const ContextNode, Option<Slot>),
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    // In this frame whichever path the call takes, so a call that follows
    // one abandoned from the same place overwrites its token (see `stack`).
    let anchor = Anchor::new();
    // SAFETY: forwarded caller obligation; `anchor` is in this frame.
    unsafe { call_from_at(site, read, &anchor, on_error, on_panic, body) }
}

/// [`call_from`] with the anchor its caller made in the trampoline's frame
/// (a `Closure::new` call's, which passes it to its slow path too).
///
/// # Safety
///
/// As for `call_from`; `anchor` is in the frame of the trampoline whose
/// call this is, used by no other call, and every call from that
/// trampoline uses its anchor there.
#[hot_path]
pub(crate) unsafe fn call_from_at<R>(
    site: &Site,
    read: (*const ContextNode, Option<Slot>),
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    // The fast path: a bound thread with no call running.
    let (bound, slot) = read;
    if thread::serves(bound) {
        // SAFETY: a value `thread::serves` accepts (see there).
        let node: &'static ContextNode = unsafe { &*bound };
        // SAFETY: `node` serves this thread.
        if unsafe { node.value.is_idle() } {
            // SAFETY: `node` serves this thread and is idle; `anchor` is in this
            // call's frame.
            unsafe { node.value.enter_idle(anchor) };
            // SAFETY: entered just above; a bound context: nothing to release.
            return unsafe { outermost(site, node, anchor, on_error, on_panic, body, || {}) };
        }
    } else if site.attach == AttachMode::PerCall && !bound.is_null() {
        // The per-call fast path: the context this thread's last per-call call
        // cached.
        if let Some(slot) = &slot {
            if let Some(node) = thread::take_cached(slot, bound) {
                let release = || {
                    // SAFETY: the per-call call is returning: it gives `node` up, with
                    // no call on it; `slot` is this thread's.
                    unsafe { thread::release_cached(slot, node) }
                };
                // SAFETY: `node` was just taken from this thread's cache; `anchor`
                // is in this call's frame.
                return unsafe {
                    per_call_on(site, node, anchor, release, on_error, on_panic, body)
                };
            }
        }
    }
    // Everything else, from this one place (see `call_cold`).
    call_cold(site, anchor, on_error, on_panic, body)
}

/// The slot's value as the fast path sees it, and the slot: null and
/// `None` while the fast path is closed.
#[hot_path]
pub(crate) fn fast_slot(site: &Site) -> (*const ContextNode, Option<Slot>) {
    let slot = Slot::fast(|| site.passes_gate());
    (slot.as_ref().map_or(core::ptr::null(), Slot::get), slot)
}

/// The bound fast path on `node`: runs the call, or the slow path if a
/// call is recorded as running.
///
/// # Safety
///
/// `node` serves the calling thread (`thread::serves`); `anchor` is in the
/// calling trampoline's frame.
#[hot_path]
pub(super) unsafe fn bound_on<R>(
    site: &Site,
    node: &'static ContextNode,
    anchor: &Anchor,
    on_error: impl FnOnce() -> R,
    on_panic: impl FnOnce() -> R,
    body: impl FnOnce(&Frame) -> Result<R, Failure>,
) -> R {
    // SAFETY: caller obligations; only this thread releases `node`.
    if !unsafe { node.value.enter_outermost(anchor) } {
        return call_slow(site, anchor, on_error, on_panic, body);
    }
    // SAFETY: entered just above; a bound context: nothing to release.
    unsafe { outermost(site, node, anchor, on_error, on_panic, body, || {}) }
}

/// The per-call fast path on `node`, just taken from the thread's cache,
/// which `release` caches again.
///
/// # Safety
///
/// `node` serves the calling thread, which took it from its cache;
/// `anchor` is in the calling trampoline's frame; `release` gives `node`
/// up as `thread::release_cached` does.
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
    // SAFETY: caller obligations. A cached context is idle, so this
    // succeeds; else the slow path finds `node` bound and releases it.
    if unsafe { node.value.enter_outermost(anchor) } {
        // SAFETY: entered just above; `release` gives `node` up.
        return unsafe { outermost(site, node, anchor, on_error, on_panic, body, release) };
    }
    call_slow(site, anchor, on_error, on_panic, body)
}

/// Runs a call `Context::enter_outermost` started on `node`: the body,
/// `leave_outermost`, `release`, and the outcome.
///
/// # Safety
///
/// `node` serves the calling thread, and the calling trampoline's call
/// entered it with `enter_outermost` and has not left.
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
        // SAFETY: caller obligations.
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

/// [`call`] for a callback with one `#[local]` parameter. The fast path
/// finds the value ready (it exists, is bound to the thread and free) and
/// holds it for the call; else the slow path looks it up as
/// [`Frame::local`] does.
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

/// The `#[local]` fast path from the slot's value `bound`.
///
/// # Safety
///
/// `anchor` is in the calling trampoline's frame.
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
    // Whatever the fast path cannot serve: one call, as for `call_cold`.
    let ready = 'ready: {
        if !thread::serves(bound) {
            break 'ready None;
        }
        // SAFETY: a value `thread::serves` accepts (see there).
        let node: &'static ContextNode = unsafe { &*bound };
        // SAFETY: `node` serves this thread.
        if !unsafe { node.value.is_idle() } {
            break 'ready None;
        }
        // SAFETY: as above; for the call that starts next on the idle context.
        unsafe { node.value.locals.get_ready(key) }.map(|(entry, value)| (node, entry, value))
    };
    match ready {
        // SAFETY: `node` serves this thread and is idle; `anchor` is in the
        // trampoline's frame (caller obligation); `entry` holds `value`'s
        // index, a free value that the call holds until it leaves.
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

/// The `#[local]` fast path on `node` with `value`, whose index `entry`
/// holds. `value` is a parameter, and this `#[inline]` rather than
/// `#[hot_path]` (inlined first, the body would reach the value through
/// `catch_unwind`'s data), so the compiler sees the body reach only it and
/// drops the dead stores as on the bound path (`context::Running`).
///
/// # Safety
///
/// `node` serves the calling thread and is idle; `anchor` is in the
/// calling trampoline's frame; `entry` is `local::holding` `value`'s index.
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
    // SAFETY: caller obligations; the call holds the value until it leaves
    // (its `LocalRef` does nothing when dropped).
    unsafe { node.value.enter_idle_holding(anchor, entry) };
    let body = move |frame: &Frame| body(frame, LocalRef::held_by_call(value));
    // SAFETY: entered just above; a bound context: nothing to release.
    unsafe { outermost(site, node, anchor, on_error, on_panic, body, || {}) }
}

/// Starts the trampoline this is inlined into on a 64-byte boundary, so
/// its straight line sits in one instruction-fetch line. No instruction:
/// aligning *subsection 1* aligns the function's section, and the padding
/// lands after the code. ELF x86-64 and aarch64 Linux only.
#[inline(always)]
pub(crate) fn align_to_fetch_line() {
    align_function::<6>();
}

/// Starts the function this is inlined into on a `2^LOG2`-byte boundary,
/// as [`align_to_fetch_line`] does.
#[inline(always)]
pub(super) fn align_function<const LOG2: u32>() {
    #[cfg(all(
        any(target_arch = "x86_64", target_arch = "aarch64"),
        target_os = "linux",
        not(miri)
    ))]
    // SAFETY: assembler directives only; the subsection is restored.
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
