//! The allocation a closure's data pointer points to: a [`Shared`], read
//! through its [`Header`] by code that does not know the body's type, and
//! the reference count that decides when the body is dropped.
//!
//! The last release drops the body ([`destroy`]), or, if calls may
//! announce the closure, leaves the drop to the last of them
//! ([`retire`]). A small allocation outlives its body in [`tombstones`],
//! for the misuse checks.
//!
//! # Atomic orderings
//!
//! The reference count follows `Arc`: a call takes its reference with a
//! Relaxed increment (an owner's reference keeps the allocation alive, and
//! C's hand-over of the pointer orders the construction before the call);
//! every release is a Release decrement, and the one that reaches zero
//! issues an Acquire fence before retiring the closure, so every counted
//! call happens before the drop. Announced calls are ordered by the hazard
//! words (`sync::Hazard`).

use core::mem::{MaybeUninit, needs_drop, size_of};
use core::ptr::NonNull;
use core::sync::atomic::fence;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::hold::{Hold, retire};
use super::owner::OWNED;
use super::tombstones;
use crate::boundary::{OnFailure, Site};
use crate::diag::{abort_with, report};
use crate::failure::payload_message;
use crate::gate::GatePolicy;
use crate::settings::AttachMode;
use crate::sync::{AtomicU32, AtomicUsize, MARKED, Ordering, Retirement};
use crate::valgrind;

/// The start of every closure allocation, which the data pointer points
/// to.
#[repr(C)]
pub(super) struct Header {
    /// One for the owner, one per call in flight that counts itself (every
    /// call but the announced ones: see [`Hold`]).
    refs: AtomicUsize,
    /// What the release of the last reference runs: [`destroy`] where no
    /// call announces the closure, else [`retire`], which waits for the
    /// calls that do; once dropped, [`released_after_drop`].
    last_release: unsafe fn(NonNull<Header>),
    /// Drops the closure, a `Shared<B, R>`: [`destroy`].
    pub(super) destroy: unsafe fn(NonNull<Header>),
    /// Frees the allocation once the closure was dropped:
    /// [`free_allocation`], for [`tombstones`].
    pub(super) free: unsafe fn(NonNull<Header>),
    /// [`MARKED`] under valgrind, else 0: what an announcement carries, so
    /// that its withdrawal tells helgrind it happens before the drop.
    pub(super) marked: usize,
    /// The calls that announced the closure and that its drop waits for,
    /// once the last reference is released.
    pub(super) retirement: Retirement,
    /// How C gave up the owner's reference, if it did: see
    /// [`give_up_owner`](super::owner::give_up_owner).
    pub(super) owner: AtomicU32,
}

/// A closure's allocation: the header first, then what the boundary needs
/// to call it, then the body.
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
    let shared = Box::new(Shared {
        header: Header {
            refs: AtomicUsize::new(1),
            last_release: if hold == Hold::Announced {
                retire
            } else {
                destroy::<B, R>
            },
            destroy: destroy::<B, R>,
            free: free_allocation::<B, R>,
            marked: if valgrind::running() { MARKED } else { 0 },
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

/// The site of the closure of `header`, whatever its body and result
/// types: `Shared` is `#[repr(C)]`, so the site lies at the same offset in
/// every `Shared<B, R>`.
///
/// # Safety
///
/// `header` is the header of a closure from `allocate`, alive or kept by
/// [`tombstones`] (whose site stays as it was).
pub(super) unsafe fn site_of<'a>(header: NonNull<Header>) -> &'a Site {
    // SAFETY: an allocation from `allocate` (caller obligation), a
    // `Shared<B, R>` whose site is at the offset `Shared<(), ()>` has it.
    unsafe { &(*header.cast::<Shared<(), ()>>().as_ptr()).site }
}

/// Drops a `Shared<B, R>` whose last reference was released: drops its
/// body, and keeps the allocation in [`tombstones`] (or frees it, if it
/// is larger than they keep).
///
/// # Safety
///
/// `header` is the header of a `Shared<B, R>` from `allocate`, with no
/// reference left and no call holding it; it was not dropped before.
unsafe fn destroy<B, R>(header: NonNull<Header>) {
    // The body is the only part of a `Shared` with anything to drop.
    const { assert!(!needs_drop::<Header>() && !needs_drop::<Site>() && !needs_drop::<R>()) };
    let shared = header.cast::<Shared<B, R>>().as_ptr();
    // SAFETY: a live `Shared<B, R>` from `allocate` that nothing else
    // reaches (caller obligation). A reference counted on it from now on
    // is a call made after the drop, whose release must not drop it again.
    let name = unsafe {
        (*shared).header.last_release = released_after_drop;
        (*shared).site.name
    };
    // SAFETY: the body is alive and dropped once, here (caller
    // obligation); the allocation stays until `free_allocation`.
    let body = unsafe { &raw mut (*shared).body };
    // SAFETY: as above.
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| unsafe { body.drop_in_place() })) {
        dropped_with_panic(name, payload);
    }
    if size_of::<Shared<B, R>>() <= tombstones::MAX_SIZE {
        // SAFETY: small enough, its body dropped, nothing holds it; its
        // `free` is `free_allocation::<B, R>`.
        unsafe { tombstones::keep(header) };
    } else {
        // SAFETY: its body dropped, nothing holds it.
        unsafe { free_allocation::<B, R>(header) };
    }
}

/// Frees the allocation of a `Shared<B, R>` whose body was dropped.
///
/// # Safety
///
/// `header` is the header of a `Shared<B, R>` from `allocate` whose body
/// was dropped, which nothing uses any more.
unsafe fn free_allocation<B, R>(header: NonNull<Header>) {
    // SAFETY: from `Box::leak` in `allocate` (caller obligation); a
    // `MaybeUninit` has the layout of the `Shared` and drops nothing of it
    // (the body was dropped already, the rest has nothing to drop).
    drop(unsafe { Box::from_raw(header.cast::<MaybeUninit<Shared<B, R>>>().as_ptr()) });
}

/// The last release of a closure that was dropped already (kept by
/// [`tombstones`]): a call made after the drop, a use after free by C.
///
/// # Safety
///
/// `header` is the header of a closure kept by [`tombstones`].
unsafe fn released_after_drop(header: NonNull<Header>) {
    // SAFETY: kept, so its site is readable (caller obligation).
    let name = unsafe { site_of(header) }.name;
    abort_with(&format!(
        "callgate: closure `{name}` was called after it was dropped; aborting"
    ));
}

#[cold]
#[inline(never)]
fn dropped_with_panic(name: &str, payload: Box<dyn core::any::Any + Send>) {
    report(&format!(
        "callgate: dropping closure `{name}` panicked: {}",
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

/// Gives up one reference; the last one drops the closure, once the calls
/// that announced it have returned.
///
/// # Safety
///
/// The caller owns one reference to the live closure of `header`, and uses
/// neither the reference nor the closure afterwards.
#[hot_path]
pub(super) unsafe fn release(header: NonNull<Header>) {
    // SAFETY: live until this decrement (caller obligation).
    let refs = unsafe { &(*header.as_ptr()).refs };
    // Release/Acquire: see "Atomic orderings" in the module docs.
    if refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    fence(Ordering::Acquire);
    // SAFETY: the last reference is gone; `last_release` was set by
    // `allocate` for this allocation's type and kind.
    unsafe { ((*header.as_ptr()).last_release)(header) };
}
