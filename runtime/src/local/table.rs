//! [`Locals`]: the table of one context's `#[local]` values, and the
//! value the fast path found last. Taking a value is in `lookup`, letting
//! go of values in `release`.

use core::cell::{Cell, UnsafeCell};
use core::ptr;

use super::slot::Head;

/// The `#[local]` values of one context.
///
/// `table[i]` is the slot of the type with index `i`, or a sentinel. Slots
/// are boxed and referred to by raw pointer, and the table is borrowed
/// only while no user code runs, so an outer call's `LocalRef` stays valid
/// while a nested callback grows the table.
///
/// `repr(C)`: the first 32 bytes are what the `#[local]` fast path reads
/// (asserted here and in `context`).
#[repr(C)]
pub(crate) struct Locals {
    /// The key's entry word ([`holding`](super::holding) its index) of the
    /// value `get_ready` found last, or [`NOTHING`]. While it is a key's,
    /// `last_slot` is that index's slot, bound, and `READY` or held through
    /// the entry word. Whatever else holds it, unbinds it or takes it out
    /// of the table forgets it first (`hold`, `release_each`, `abandon`).
    pub(super) last: Cell<u64>,
    /// The slot of the value at `last`.
    pub(super) last_slot: Cell<*mut Head>,
    /// A boxed slice, to fit in the 32 bytes; it grows only on a cold path.
    pub(super) table: UnsafeCell<Box<[*mut Head]>>,
    /// How many of the values are bound to the thread the context serves
    /// (`bind` ran, `release` has not); the per-call fast path checks it.
    pub(super) bound: Cell<u32>,
}

const _: () = assert!(core::mem::offset_of!(Locals, bound) == 32);

/// `Locals::last` when no value is remembered: no key's entry word (whose
/// low half is 1, or which is 0 before the lookup).
pub(super) const NOTHING: u64 = u64::MAX;

// SAFETY: the slots are owned boxes of `Send` values (`Local: Send`) or the
// immutable sentinels; the raw pointers only avoid `Box`'s uniqueness so a
// `LocalRef` can coexist with a nested lookup. Moving `Locals` to another
// thread moves the boxes.
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
                // SAFETY: every slot is freed only here or in
                // `release_each`, which takes it out of the table first.
                unsafe { (vtable.drop)(head) };
            }
        }
    }
}
