//! The portable slot: a const-initialised `thread_local!` without a
//! destructor, so it stays usable during thread teardown.
//!
//! # Atomic orderings
//!
//! The slot is an atomic only so that [`claim`] is indivisible for a
//! signal handler on the thread. Every access is `Relaxed` (a plain load
//! or store, as a `Cell`'s): no other thread touches the slot, and a
//! handler sees its own thread's accesses in program order.

use core::sync::atomic::{AtomicPtr, Ordering};

use crate::context::ContextNode;

thread_local! {
    static CURRENT: AtomicPtr<ContextNode> = const { AtomicPtr::new(core::ptr::null_mut()) };
}

#[hot_path]
pub(super) fn get() -> *const ContextNode {
    // Relaxed: see "Atomic orderings".
    CURRENT.with(|current| current.load(Ordering::Relaxed))
}

#[hot_path]
pub(super) fn set(value: *const ContextNode) {
    // Relaxed: see "Atomic orderings".
    CURRENT.with(|current| current.store(value.cast_mut(), Ordering::Relaxed));
}

#[inline]
pub(super) fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    CURRENT.with(|current| compare_exchange(current, expected, value))
}

/// `cmpxchg` without `lock`: one instruction is never interrupted halfway,
/// and no other thread touches the slot.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[hot_path]
fn compare_exchange(
    slot: &AtomicPtr<ContextNode>,
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    let found: *const ContextNode;
    // SAFETY: the calling thread's slot, an aligned pointer-sized atomic
    // that only this thread (and its signal handlers) accesses.
    unsafe {
        core::arch::asm!(
            "cmpxchg qword ptr [{slot}], {value}",
            slot = in(reg) slot.as_ptr(),
            value = in(reg) value,
            inout("rax") expected => found,
            options(nostack),
        );
    }
    if found == expected {
        Ok(())
    } else {
        Err(found)
    }
}

/// A compare-and-swap: where it is a load-/store-exclusive pair, a signal
/// in between fails the store, and the loop reads what the handler left.
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
#[hot_path]
fn compare_exchange(
    slot: &AtomicPtr<ContextNode>,
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    // Relaxed: see "Atomic orderings".
    slot.compare_exchange(
        expected.cast_mut(),
        value.cast_mut(),
        Ordering::Relaxed,
        Ordering::Relaxed,
    )
    .map(drop)
    .map_err(<*mut ContextNode>::cast_const)
}

pub(super) use super::no_offset::*;
