//! [`LocalRef`]: a call's borrow of a `#[local]` value, which ends the
//! hold it recorded when it drops.

use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};

use super::slot::{Head, READY, Slot};

/// A `#[local]` value borrowed by one call; other calls on the same thread
/// that ask for the same type get an error until it is dropped.
pub struct LocalRef<'a, T> {
    value: *mut T,
    held: Held,
    _owner: PhantomData<&'a mut T>,
}

/// Where a [`LocalRef`] recorded its hold, undone when it is dropped.
enum Held {
    /// In the state of the slot whose head this is, which is the depth of
    /// the call.
    State(*mut Head),
    /// In the context, by the call, which ends the hold when it leaves.
    ByCall,
}

impl<'a, T> LocalRef<'a, T> {
    /// The value of the slot `head`, held through the slot's state, which
    /// its drop sets back to `READY`.
    ///
    /// # Safety
    ///
    /// `head` is a live slot of `T`, bound to the calling thread, whose
    /// state records the hold of the call this is for; it stays live
    /// while the `LocalRef` does.
    pub(super) unsafe fn held_in_state(head: *mut Head) -> LocalRef<'a, T> {
        LocalRef {
            // SAFETY: a live slot of `T` (caller obligation).
            value: unsafe { Slot::value_at(head) },
            held: Held::State(head),
            _owner: PhantomData,
        }
    }

    /// `value`, held by the running call through its context's entry
    /// word (see `Locals::get_ready`), which the call's leave ends:
    /// dropping it does nothing.
    pub(crate) fn held_by_call(value: &'a mut T) -> LocalRef<'a, T> {
        LocalRef {
            value,
            held: Held::ByCall,
            _owner: PhantomData,
        }
    }
}

impl<T> Deref for LocalRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the hold (the slot's state, or the entry word of the call
        // that took the value) guarantees this is the only reference to it.
        unsafe { &*self.value }
    }
}

impl<T> DerefMut for LocalRef<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`.
        unsafe { &mut *self.value }
    }
}

impl<T> Drop for LocalRef<'_, T> {
    #[inline]
    fn drop(&mut self) {
        match self.held {
            // SAFETY: the slot outlives the borrow; only the owning thread
            // touches it, and no other reference to its head exists now.
            // The value was bound before this `LocalRef` was made.
            Held::State(head) => unsafe { (*head).state = READY },
            Held::ByCall => {}
        }
    }
}
