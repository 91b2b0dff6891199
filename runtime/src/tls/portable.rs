//! The portable slot: a const-initialised `thread_local!` without a
//! destructor, so it stays usable during thread teardown.

use core::cell::Cell;

use crate::context::ContextNode;

thread_local! {
    static CURRENT: Cell<*const ContextNode> = const { Cell::new(core::ptr::null()) };
}

#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn get() -> *const ContextNode {
    CURRENT.with(Cell::get)
}

#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn set(value: *const ContextNode) {
    CURRENT.with(|current| current.set(value));
}

/// Not one instruction here: a signal handler that binds the thread between
/// the read and the write is overwritten (callbacks from signal handlers
/// are outside the contract).
#[inline]
pub(super) fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    CURRENT.with(|current| {
        let found = current.get();
        if found == expected {
            current.set(value);
            Ok(())
        } else {
            Err(found)
        }
    })
}

// Where the slot has no static offset (`tls::HAS_STATIC` is false).
pub(super) use super::no_static::*;
