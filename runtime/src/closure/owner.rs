//! The owner's reference as C gives it up: by the closure's `free`, or
//! by a once closure's call. The header's `owner` word records which, so
//! that a second give-up aborts with a message naming the closure; after
//! the drop, [`tombstones`](super::tombstones) keeps the word readable.
//!
//! # Atomic orderings
//!
//! The `owner` word is Relaxed: it orders nothing (the reference count
//! does), and of two read-modify-writes of it one reads the other's value
//! (see [`give_up_owner`]).

use core::ffi::c_void;
use core::ptr::NonNull;

use super::allocation::{Header, release, site_of};
use crate::diag::abort_with;
use crate::sync::Ordering;

/// `Header::owner` while the owner's reference is held (by a
/// [`Closure`](super::Closure) or [`OnceClosure`](super::OnceClosure)
/// handle, or by C after `into_raw_parts`).
pub(super) const OWNED: u32 = 0;
/// `Header::owner` once C's `free` gave up the owner's reference.
pub(super) const FREED: u32 = 1;
/// `Header::owner` once a once closure's call took the owner's reference.
pub(super) const CALLED: u32 = 2;

/// Records that C gave up the owner's reference to the closure of
/// `header`, `by` its `free` ([`FREED`]) or by a once closure's call
/// ([`CALLED`]). If C gave it up before, aborts with a message naming the
/// closure: a second `free`, a once closure's second call, a `free` after
/// its call or a call after its `free`.
///
/// # Safety
///
/// `header` is the header of a closure from `allocate`, alive or kept by
/// [`tombstones`](super::tombstones).
#[hot_path]
pub(super) unsafe fn give_up_owner(header: NonNull<Header>, by: u32) {
    // SAFETY: alive or kept (caller obligation).
    let owner = unsafe { &(*header.as_ptr()).owner };
    // Relaxed: see "Atomic orderings" in the module docs.
    let before = owner.swap(by, Ordering::Relaxed);
    if before != OWNED {
        // SAFETY: as above.
        unsafe { given_up_twice(header, before, by) };
    }
}

/// The abort of [`give_up_owner`].
///
/// # Safety
///
/// As [`give_up_owner`].
#[cold]
#[inline(never)]
unsafe fn given_up_twice(header: NonNull<Header>, before: u32, by: u32) -> ! {
    // SAFETY: alive or kept (caller obligation).
    let name = unsafe { site_of(header) }.name;
    let what = match (before, by) {
        (FREED, FREED) => format!("closure `{name}` was freed twice"),
        (CALLED, FREED) => {
            format!("once closure `{name}` was freed after its call, which frees it")
        }
        (FREED, _) => format!("once closure `{name}` was called after it was freed"),
        _ => format!("once closure `{name}` was called twice"),
    };
    abort_with(&format!("callgate: {what}; aborting"))
}

/// The `free` of every closure: releases the reference C holds. A second
/// `free`, or one after a once closure's call, aborts with a message while
/// the closure is alive or kept by [`tombstones`](super::tombstones).
///
/// # Safety
///
/// `data` is NULL, or the data of a closure C owns (from `into_raw_parts`),
/// and C uses it no more.
pub(super) unsafe extern "C" fn free_closure(data: *mut c_void) {
    if let Some(header) = NonNull::new(data.cast::<Header>()) {
        // SAFETY: the data of a closure (caller obligation), or of one
        // already dropped and still kept, whose second `free` this
        // catches.
        unsafe { give_up_owner(header, FREED) };
        // SAFETY: C gives up its reference (caller obligation), which it
        // held: it had not given it up (checked just above).
        unsafe { release(header) };
    }
}
