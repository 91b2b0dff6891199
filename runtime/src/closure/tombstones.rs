//! The allocations of the last closures dropped, kept so that C's misuse
//! of a closure's data (a second `free`) reads a header still there and
//! aborts with a message, rather than read freed memory. Bounded: [`SLOTS`]
//! allocations of at most [`MAX_SIZE`] bytes.
//!
//! # Atomic orderings
//!
//! A slot is swapped AcqRel: the Release publishes the allocation (its
//! body dropped) to the thread that takes it out again, whose Acquire
//! orders the keeper's writes before the free. The count that picks the
//! slot is Relaxed: two threads on one slot each swap, and the second
//! frees the first's.

use core::ptr::{self, NonNull};

use super::allocation::Header;
use crate::sync::{AtomicPtr, AtomicUsize, Ordering};
use crate::valgrind;

pub(super) const SLOTS: usize = 64;

/// The largest allocation kept, in bytes.
pub(super) const MAX_SIZE: usize = 512;

static KEPT: [AtomicPtr<Header>; SLOTS] = [const { AtomicPtr::new(ptr::null_mut()) }; SLOTS];

/// Picks the next slot.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// Keeps the allocation, and frees the one its slot held.
///
/// # Safety
///
/// `header` is a closure allocation of at most [`MAX_SIZE`] bytes, its
/// body dropped, nothing holding it, freed by its header's `free`.
pub(super) unsafe fn keep(header: NonNull<Header>) {
    // For helgrind, which does not see the slot's ordering.
    valgrind::happens_before(header.as_ptr());
    // Relaxed, AcqRel: see "Atomic orderings" in the module docs.
    let slot = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    let evicted = KEPT[slot].swap(header.as_ptr(), Ordering::AcqRel);
    if let Some(evicted) = NonNull::new(evicted) {
        // SAFETY: kept (under `keep`'s obligations) and out of its slot now:
        // nothing else frees it.
        unsafe { free(evicted) };
    }
}

/// Frees every kept allocation: the library is being unloaded.
///
/// # Safety
///
/// No thread runs the library's code, now or until it is unloaded.
// Only the ELF unload hook (Linux, Android) frees them.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
#[cold]
pub(crate) unsafe fn free_all() {
    for slot in &KEPT {
        // Acquire: see "Atomic orderings" in the module docs.
        let kept = slot.swap(ptr::null_mut(), Ordering::Acquire);
        if let Some(kept) = NonNull::new(kept) {
            // SAFETY: as in `keep`: kept, and now out of its slot.
            unsafe { free(kept) };
        }
    }
}

/// Frees a kept allocation.
///
/// # Safety
///
/// `header` was kept by [`keep`] and taken out of its slot.
unsafe fn free(header: NonNull<Header>) {
    valgrind::happens_after(header.as_ptr());
    // SAFETY: kept (so its `free` frees it and nothing holds it) and out of
    // its slot: freed once.
    unsafe { ((*header.as_ptr()).free)(header) };
}

/// True when the allocation of `header` is kept.
#[cfg(test)]
pub(super) fn holds(header: NonNull<Header>) -> bool {
    // Relaxed: the tests read their own thread's keeps.
    KEPT.iter()
        .any(|slot| slot.load(Ordering::Relaxed) == header.as_ptr())
}
