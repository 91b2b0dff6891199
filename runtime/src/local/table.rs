//! [`Locals`]: the table of one context's `#[local]` values, and the
//! value the fast path found last.

use core::cell::{Cell, UnsafeCell};
use core::ptr;

use super::slot::Head;

/// The `#[local]` values of one context.
///
/// `table[i]` is the slot of the type with index `i`, or a sentinel. Slots
/// are boxed and referred to by raw pointer, and the table is borrowed
/// only while no user code runs, so an outer call's `LocalRef` survives a
/// nested callback growing the table. `repr(C)`: the fast path reads the
/// first 32 bytes (asserted here and in `context`).
#[repr(C)]
pub(crate) struct Locals {
    /// The key entry word of the value `get_ready` found last, or [`NOTHING`];
    /// `last_slot` is then its slot, bound, and `READY` or held through the
    /// entry word. Anything that holds, unbinds or removes it forgets it
    /// first (`hold`, `release_each`, `abandon`).
    pub(super) last: Cell<u64>,
    pub(super) last_slot: Cell<*mut Head>,
    /// A boxed slice, to fit in the 32 bytes.
    pub(super) table: UnsafeCell<Box<[*mut Head]>>,
    /// How many values are bound (`bind` ran, `release` has not).
    pub(super) bound: Cell<u32>,
}

const _: () = assert!(core::mem::offset_of!(Locals, bound) == 32);

/// `Locals::last` when nothing is remembered: no key's entry word.
pub(super) const NOTHING: u64 = u64::MAX;

// SAFETY: the slots are owned boxes of `Send` values (`Local: Send`) or
// immutable sentinels; moving `Locals` moves the boxes.
unsafe impl Send for Locals {}

impl Locals {
    pub(crate) fn new() -> Locals {
        Locals {
            table: UnsafeCell::new(Box::new([])),
            bound: Cell::new(0),
            last: Cell::new(NOTHING),
            last_slot: Cell::new(ptr::null_mut()),
        }
    }
}

impl Drop for Locals {
    fn drop(&mut self) {
        for &head in self.table.get_mut().iter() {
            // SAFETY: a live slot or a sentinel (read only).
            if let Some(vtable) = unsafe { (*head).vtable } {
                // SAFETY: a slot is freed only here or in `release_each`, which takes
                // it out of the table first.
                unsafe { (vtable.drop)(head) };
            }
        }
    }
}
