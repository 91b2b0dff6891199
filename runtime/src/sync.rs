//! The synchronisation primitives the concurrent parts of the runtime use.
//!
//! Under `cfg(callgate_loom)` they are `loom`'s, so the loom models
//! (`loom_models.rs`) explore the gate, the free list, [`Turn`] and
//! [`Hazard`]; otherwise `core`/`std`'s.

// Closures and contexts use it (not in loom builds), and the models.
#[cfg(any(not(callgate_loom), test))]
mod hazard;
#[cfg(not(callgate_loom))]
pub(crate) use hazard::MARKED;
#[cfg(any(not(callgate_loom), test))]
pub(crate) use hazard::{Hazard, Retirement};
mod bell;
pub(crate) use bell::Bell;
// Kept in contexts, which loom builds leave out.
#[cfg(not(callgate_loom))]
mod held;
#[cfg(not(callgate_loom))]
pub(crate) use held::{HeldRefs, OuterWait};
#[cfg(any(not(callgate_loom), test))]
mod turn;
#[cfg(any(not(callgate_loom), test))]
pub(crate) use turn::Turn;
// Only a `fork` child handler records orphaned marks.
#[cfg(all(unix, not(callgate_loom)))]
pub(crate) use turn::{is_orphaned, orphan_marks};

#[cfg(callgate_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
// Only `Turn` and `Hazard` use it, in loom builds only in their tests.
#[cfg(all(callgate_loom, test))]
pub(crate) use loom::sync::atomic::AtomicUsize;

#[cfg(callgate_loom)]
pub(crate) use loom::sync::Mutex;

#[cfg(not(callgate_loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(not(callgate_loom))]
pub(crate) use std::sync::Mutex;

/// A value with its 128-byte line pair to itself, for a word that threads
/// write (a free list's head), so its writes cost no reader of other data.
#[repr(C, align(128))]
pub(crate) struct OwnLines<T>(pub(crate) T);

impl<T> core::ops::Deref for OwnLines<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Locks `mutex`, ignoring poisoning: every critical section in the runtime
/// leaves the protected data consistent before anything that could panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> crate::sync::Guard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(callgate_loom)]
pub(crate) type Guard<'a, T> = loom::sync::MutexGuard<'a, T>;
#[cfg(not(callgate_loom))]
pub(crate) type Guard<'a, T> = std::sync::MutexGuard<'a, T>;
