//! The owner's reference as C gives it up, by `free` or a once closure's
//! call: the header's `owner` word records which, so a second give-up
//! aborts with a message naming the closure.
//!
//! # Atomic orderings
//!
//! The `owner` word is Relaxed: it orders nothing (the reference count
//! does), and of two swaps one reads the other's value.

use core::ffi::c_void;
use core::ptr::NonNull;

use super::allocation::{Header, release, site_of};
use crate::diag::abort_with;
use crate::failure::callback_name;
use crate::sync::Ordering;

/// `Header::owner` while the owner's reference is held (by a handle, or by
/// C after `into_raw_parts`).
pub(super) const OWNED: u32 = 0;
/// Given up by C's `free`.
pub(super) const FREED: u32 = 1;
/// Given up by a once closure's call.
pub(super) const CALLED: u32 = 2;

/// Records that C gave up the owner's reference, `by` [`FREED`] or
/// [`CALLED`]; aborts naming the closure if it did before.
///
/// # Safety
///
/// `header` is from `allocate`, alive or kept by
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

///
/// # Safety
///
/// As [`give_up_owner`].
#[cold]
#[inline(never)]
unsafe fn given_up_twice(header: NonNull<Header>, before: u32, by: u32) -> ! {
    // SAFETY: alive or kept (caller obligation).
    let name = callback_name(unsafe { site_of(header) }.name);
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

/// The `free` of every closure: releases the reference C holds.
///
/// # Safety
///
/// `data` is NULL, or the data of a closure C owns (from `into_raw_parts`),
/// and C uses it no more.
pub(super) unsafe extern "C" fn free_closure(data: *mut c_void) {
    if let Some(header) = NonNull::new(data.cast::<Header>()) {
        // SAFETY: a closure's data (caller obligation), or a dropped one's,
        // still kept, whose second `free` this catches.
        unsafe { give_up_owner(header, FREED) };
        // SAFETY: C's reference (caller obligation), not given up before
        // (checked just above).
        unsafe { release(header) };
    }
}
