//! The allocation a closure's data pointer points to: a [`Shared`], read
//! through its [`Header`] by code that does not know the body's type, and
//! the reference count that decides when the body is dropped ([`destroy`],
//! or [`retire`] if calls may announce it, [`retire_turn`] if they take
//! turns). A small allocation outlives its body in [`tombstones`], for the
//! misuse checks.
//!
//! # Atomic orderings
//!
//! The reference count follows `Arc`: a call takes its reference with a
//! Relaxed increment (an owner's reference keeps the allocation alive, and
//! C's hand-over of the pointer orders the construction before the call);
//! releases are Release decrements, and the last one issues an Acquire
//! fence before retiring the closure. Announced calls are ordered by the
//! hazard words (`sync::Hazard`), turn-taking ones by the turn.

use core::mem::{MaybeUninit, needs_drop, size_of};
use core::ptr::NonNull;
use core::sync::atomic::fence;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::exclusive::retire_turn;
use super::hold::{Hold, retire};
use super::owner::OWNED;
use super::tombstones;
use crate::boundary::{OnFailure, Site};
use crate::diag::{abort_with, report};
use crate::failure::{callback_name, payload_message};
use crate::gate::GatePolicy;
use crate::settings::AttachMode;
use crate::sync::{AtomicU32, AtomicUsize, MARKED, Ordering, Retirement, Turn};
use crate::valgrind;

/// The start of every closure allocation, where the data pointer points.
#[repr(C)]
pub(super) struct Header {
    /// The owner's reference and one per counting call (see [`Hold`]).
    refs: AtomicUsize,
    /// Run by the last release: [`destroy`], [`retire`] if calls announce
    /// it, [`retire_turn`] if they take turns, and [`released_after_drop`]
    /// once dropped.
    last_release: unsafe fn(NonNull<Header>),
    pub(super) destroy: unsafe fn(NonNull<Header>),
    /// Frees the allocation once dropped (for [`tombstones`]).
    pub(super) free: unsafe fn(NonNull<Header>),
    /// [`MARKED`] under valgrind, else 0: an announcement carries it, so its
    /// withdrawal tells helgrind.
    pub(super) marked: usize,
    /// The announcing calls the drop waits for.
    pub(super) retirement: Retirement,
    /// How C gave up the owner's reference
    /// ([`give_up_owner`](super::owner::give_up_owner)).
    pub(super) owner: AtomicU32,
    /// The turns of a `Closure::new`'s calls (unused by the others).
    pub(super) turn: Turn,
}

/// A closure's allocation: the header, what the boundary needs, the body.
#[repr(C)]
pub(super) struct Shared<B, R> {
    header: Header,
    pub(super) site: Site,
    pub(super) on_failure: R,
    pub(super) body: B,
}

/// Allocates a closure, with one reference for its owner.
pub(super) fn allocate<B, R>(
    name: &'static str,
    on_failure: R,
    body: B,
    hold: Hold,
) -> NonNull<Header> {
    let annotated = valgrind::running();
    let shared = Box::new(Shared {
        header: Header {
            refs: AtomicUsize::new(1),
            turn: Turn::announced(annotated),
            last_release: match hold {
                Hold::Announced => retire,
                Hold::Turn => retire_turn,
                Hold::Owner => destroy::<B, R>,
            },
            destroy: destroy::<B, R>,
            free: free_allocation::<B, R>,
            marked: if annotated { MARKED } else { 0 },
            retirement: Retirement::new(),
            owner: AtomicU32::new(OWNED),
        },
        site: Site {
            name,
            attach: AttachMode::Bound,
            gate: GatePolicy::Wait,
            on_panic: OnFailure::Return,
            on_error: OnFailure::Return,
        },
        on_failure,
        body,
    });
    // The header is the first field of the `#[repr(C)]` allocation.
    NonNull::from(Box::leak(shared)).cast()
}

/// The site of the closure of `header`, whatever its types: `Shared` is
/// `#[repr(C)]`, so the site's offset is the same in every `Shared<B, R>`.
///
/// # Safety
///
/// `header` is from `allocate`, alive or kept by [`tombstones`].
pub(super) unsafe fn site_of<'a>(header: NonNull<Header>) -> &'a Site {
    // SAFETY: from `allocate` (caller obligation), with the site at the
    // offset of `Shared<(), ()>`'s.
    unsafe { &(*header.cast::<Shared<(), ()>>().as_ptr()).site }
}

/// Drops the body of a `Shared<B, R>` whose last reference was released,
/// and keeps the allocation in [`tombstones`] (or frees it, if larger).
///
/// # Safety
///
/// `header` is a `Shared<B, R>`'s from `allocate`, with no reference left
/// and no call holding it, not dropped before.
unsafe fn destroy<B, R>(header: NonNull<Header>) {
    // Only the body has anything to drop.
    const { assert!(!needs_drop::<Header>() && !needs_drop::<Site>() && !needs_drop::<R>()) };
    let shared = header.cast::<Shared<B, R>>().as_ptr();
    // SAFETY: a live `Shared<B, R>` nothing else reaches (caller
    // obligation). A reference counted from now on is a call after the
    // drop, whose release must not drop it again.
    let name = unsafe {
        (*shared).header.last_release = released_after_drop;
        (*shared).site.name
    };
    // SAFETY: the body is alive and dropped once, here (caller obligation).
    let body = unsafe { &raw mut (*shared).body };
    // SAFETY: as above.
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| unsafe { body.drop_in_place() })) {
        dropped_with_panic(name, payload);
    }
    if size_of::<Shared<B, R>>() <= tombstones::MAX_SIZE {
        // SAFETY: small enough, its body dropped, nothing holds it; its `free`
        // is `free_allocation::<B, R>`.
        unsafe { tombstones::keep(header) };
    } else {
        // SAFETY: its body dropped, nothing holds it.
        unsafe { free_allocation::<B, R>(header) };
    }
}

/// Frees a `Shared<B, R>` whose body was dropped.
///
/// # Safety
///
/// `header` is a `Shared<B, R>`'s from `allocate`, its body dropped, and
/// nothing uses it.
unsafe fn free_allocation<B, R>(header: NonNull<Header>) {
    // SAFETY: from `Box::leak` in `allocate` (caller obligation); as a
    // `MaybeUninit` nothing more is dropped.
    drop(unsafe { Box::from_raw(header.cast::<MaybeUninit<Shared<B, R>>>().as_ptr()) });
}

/// The last release of a closure kept by [`tombstones`]: a call made after
/// the drop, a use after free by C.
///
/// # Safety
///
/// `header` is the header of a closure kept by [`tombstones`].
unsafe fn released_after_drop(header: NonNull<Header>) {
    // SAFETY: forwarded caller obligation.
    unsafe { called_after_drop(header) }
}

/// Aborts for a call of a dropped closure, naming it.
///
/// # Safety
///
/// `header` is the header of a closure kept by [`tombstones`].
#[cold]
#[inline(never)]
pub(super) unsafe fn called_after_drop(header: NonNull<Header>) -> ! {
    // SAFETY: kept, so its site is readable (caller obligation).
    let name = callback_name(unsafe { site_of(header) }.name);
    abort_with(&format!(
        "callgate: closure `{name}` was called after it was dropped; aborting"
    ));
}

#[cold]
#[inline(never)]
fn dropped_with_panic(name: &str, payload: Box<dyn core::any::Any + Send>) {
    report(&format!(
        "callgate: dropping closure `{}` panicked: {}",
        callback_name(name),
        payload_message(payload)
    ));
}

/// Takes a reference for a call.
///
/// # Safety
///
/// `header` belongs to a live closure: its owner still holds a reference.
#[hot_path]
pub(super) unsafe fn retain(header: NonNull<Header>) {
    // SAFETY: live (caller obligation).
    let refs = unsafe { &(*header.as_ptr()).refs };
    // Relaxed: see "Atomic orderings" in the module docs.
    let old = refs.fetch_add(1, Ordering::Relaxed);
    if old > isize::MAX as usize {
        abort_with("callgate: a closure has more than isize::MAX calls in flight; aborting");
    }
}

/// Gives up one reference; the last one drops the closure (once the
/// announcing calls returned).
///
/// # Safety
///
/// The caller owns one reference to the live closure, and uses neither
/// afterwards.
#[hot_path]
pub(super) unsafe fn release(header: NonNull<Header>) {
    // SAFETY: live until this decrement (caller obligation).
    let refs = unsafe { &(*header.as_ptr()).refs };
    // Release/Acquire: see "Atomic orderings" in the module docs.
    if refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    fence(Ordering::Acquire);
    // SAFETY: the last reference is gone; `last_release` is this
    // allocation's.
    unsafe { ((*header.as_ptr()).last_release)(header) };
}
