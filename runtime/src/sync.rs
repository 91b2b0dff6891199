//! The synchronisation primitives the concurrent parts of the runtime use.
//!
//! Under `cfg(callgate_loom)` they are `loom`'s model-checked versions, so the
//! gate and the free list can be explored exhaustively by the loom models in
//! `loom_models.rs`; otherwise they are `core`/`std`'s.

#[cfg(callgate_loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};
#[cfg(callgate_loom)]
pub(crate) use loom::sync::{Condvar, Mutex};

#[cfg(not(callgate_loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(not(callgate_loom))]
pub(crate) use std::sync::{Condvar, Mutex};

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
