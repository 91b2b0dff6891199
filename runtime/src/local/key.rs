//! [`LocalKey`]: where a callback finds its `Local` type's index.
//!
//! # Atomic orderings
//!
//! The index is stored and loaded `Relaxed`: a plain number, the same
//! whichever thread stores it, publishing nothing.

use core::any::TypeId;
use core::marker::PhantomData;

use super::Local;
use super::registry::index_of;
use crate::sync::{AtomicU64, Ordering};

/// Where the callbacks that take a `#[local] &mut T` find `T`'s index: a
/// `static` next to each of them. Empty until the first call that asks.
///
/// Aligned to 128 bytes: no written `static` shares its lines.
#[repr(align(128))]
pub struct LocalKey<T> {
    /// `T`'s index as the entry word that holds it ([`holding`]), so the fast
    /// path compares and stores it as it is; 0 before the lookup.
    entry: AtomicU64,
    _type: PhantomData<fn() -> T>,
}

impl<T> Default for LocalKey<T> {
    fn default() -> LocalKey<T> {
        LocalKey::new()
    }
}

impl<T> LocalKey<T> {
    /// A key whose index is looked up on first use. (No `Local` bound:
    /// `Frame::local` reports a missing impl once.)
    pub const fn new() -> LocalKey<T> {
        LocalKey {
            entry: AtomicU64::new(0),
            _type: PhantomData,
        }
    }

    /// The entry word that holds `T`'s value, or 0 before the lookup.
    #[hot_path]
    pub(super) fn entry(&self) -> u64 {
        // Relaxed: a plain number (module docs).
        self.entry.load(Ordering::Relaxed)
    }

    /// `T`'s index, or 0 before it is looked up.
    #[hot_path]
    pub(super) fn looked_up(&self) -> u32 {
        held_in(self.entry())
    }
}

impl<T: Local> LocalKey<T> {
    /// `T`'s index, assigned on first use.
    #[cold]
    pub(super) fn index(&self) -> u32 {
        match self.looked_up() {
            0 => {
                let index = index_of(TypeId::of::<T>());
                // Relaxed: every thread stores the same number.
                self.entry.store(holding(index), Ordering::Relaxed);
                index
            }
            index => index,
        }
    }
}

/// The context's entry word (`Context::entry`) of an outermost call, at
/// depth 1, that holds the value at `index` (0: none). [`LocalKey`] keeps
/// its type's index in this form, so the fast path stores it as it is.
pub(crate) const fn holding(index: u32) -> u64 {
    (index as u64) << 32 | 1
}

/// The index of the value an entry word holds, or 0.
#[hot_path]
pub(crate) const fn held_in(entry: u64) -> u32 {
    (entry >> 32) as u32
}
