//! The registry of `Local` types: one index per type for this copy of the
//! runtime.
//!
//! # Atomic orderings
//!
//! A list that only grows at its head: entries are published with a
//! Release compare-exchange on the head, and every walk starts from an
//! Acquire of it, so the entries it reaches are fully written.

use core::any::TypeId;
use core::ptr;

use crate::diag;
use crate::sync::{AtomicPtr, Ordering};

struct Registered {
    id: TypeId,
    index: u32,
    next: *const Registered,
}

/// Every `Local` type looked up so far, newest first (indices 1, 2, …).
/// Lock-free, so a `fork` never leaves the child a lock held.
static REGISTRY: AtomicPtr<Registered> = AtomicPtr::new(ptr::null_mut());

/// The index of the type `id`, registering it if it is new.
#[cold]
#[inline(never)]
pub(super) fn index_of(id: TypeId) -> u32 {
    // Acquire: pairs with the Release compare-exchange below (module docs).
    let mut head = REGISTRY.load(Ordering::Acquire);
    let mut fresh: *mut Registered = ptr::null_mut();
    loop {
        let mut entry = head.cast_const();
        while !entry.is_null() {
            // SAFETY: entries are freed only at unload; the Acquire above made
            // them visible.
            let registered = unsafe { &*entry };
            if registered.id == id {
                if !fresh.is_null() {
                    // SAFETY: from `Box::into_raw` below, never published.
                    drop(unsafe { Box::from_raw(fresh) });
                }
                return registered.index;
            }
            entry = registered.next;
        }
        let index = if head.is_null() {
            1
        } else {
            // SAFETY: as above.
            unsafe { (*head).index }
                .checked_add(1)
                .filter(|&index| index < u32::MAX)
                .unwrap_or_else(|| diag::abort_with("callgate: too many #[local] types; aborting"))
        };
        if fresh.is_null() {
            fresh = Box::into_raw(Box::new(Registered {
                id,
                index,
                next: head,
            }));
        } else {
            // SAFETY: `fresh` is ours until the compare-exchange publishes it.
            unsafe {
                (*fresh).index = index;
                (*fresh).next = head;
            }
        }
        // Release on success: publishes `fresh`. Acquire on failure: for the
        // walk from the new head.
        match REGISTRY.compare_exchange(head, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return index,
            Err(now) => head = now,
        }
    }
}

/// Frees the registry: the library is being unloaded.
///
/// # Safety
///
/// No thread runs the library's code, now or until it is unloaded.
// Only the ELF unload hook (Linux, Android) frees the registry.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub(crate) unsafe fn free_registry() {
    // Relaxed: nobody else uses the registry (caller obligation).
    let mut entry = REGISTRY.swap(ptr::null_mut(), Ordering::Relaxed);
    while !entry.is_null() {
        // SAFETY: from `Box::into_raw` in `index_of`, each reached once;
        // unused (caller obligation).
        let registered = unsafe { Box::from_raw(entry) };
        entry = registered.next.cast_mut();
    }
}
