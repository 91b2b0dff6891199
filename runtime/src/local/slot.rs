//! A context's value of one `Local` type, behind a type-erased head whose
//! state word says who may take it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::Local;
use super::holder::Holder;
use crate::failure::payload_message;

/// The state word of a slot: [`READY`] (the only state the fast path
/// accepts), a holding call's depth, or one of the states below.
pub(super) type State = u32;

/// Bound to the context's thread, and free.
pub(super) const READY: State = 0;
/// `1..=DEEPEST`: held by the call at that depth (its `LocalRef`, or its
/// `bind`).
pub(super) const DEEPEST: State = u32::MAX - 4;
/// A sentinel: `Default::default` is running.
const CONSTRUCTING: State = u32::MAX - 3;
/// A sentinel: no value of this type yet.
pub(super) const ABSENT: State = u32::MAX - 2;
/// `release` holds the value, outside every call.
const OUTSIDE: State = u32::MAX - 1;
/// Free, and `bind` has not run for the context's thread.
pub(super) const UNBOUND: State = u32::MAX;

/// The head of every slot, reached through the type-erased pointer
/// (`Slot` is `repr(C)`, head first).
#[repr(C)]
pub(super) struct Head {
    pub(super) state: State,
    /// `bind` ran for the context's thread (a gone holder's value goes back
    /// to `READY`, not `UNBOUND`).
    pub(super) bound: bool,
    /// While the state is a depth: the holding call.
    pub(super) holder: Holder,
    /// The value's operations; `None` for the sentinels.
    pub(super) vtable: Option<&'static SlotVtable>,
}

/// The entry of a type with no value yet. Never written: only `READY` and
/// depths are overwritten.
static ABSENT_SLOT: Head = Head {
    state: ABSENT,
    bound: false,
    holder: Holder::NONE,
    vtable: None,
};

/// The entry of a type whose `Default::default` runs. Never written.
static CONSTRUCTING_SLOT: Head = Head {
    state: CONSTRUCTING,
    bound: false,
    holder: Holder::NONE,
    vtable: None,
};

pub(super) fn absent() -> *mut Head {
    (&raw const ABSENT_SLOT).cast_mut()
}

pub(super) fn constructing() -> *mut Head {
    (&raw const CONSTRUCTING_SLOT).cast_mut()
}

/// Ends the hold of a slot whose holding call is gone: the value is
/// `READY` again if `bind` ran for the thread, else `UNBOUND`.
///
/// # Safety
///
/// `head` is a live slot (not a sentinel) of the calling thread's context,
/// and no reference to its head exists.
pub(super) unsafe fn free_hold(head: *mut Head) {
    // SAFETY: caller obligation.
    unsafe { (*head).state = if (*head).bound { READY } else { UNBOUND } };
}

#[repr(C)]
pub(super) struct Slot<T> {
    pub(super) head: Head,
    pub(super) value: T,
}

impl<T> Slot<T> {
    /// The value of the slot whose head is `head`; only the place is
    /// formed.
    ///
    /// # Safety
    ///
    /// `head` is the head of a live `Slot<T>`.
    #[hot_path]
    pub(super) unsafe fn value_at(head: *mut Head) -> *mut T {
        // SAFETY: a live slot of `T` (caller obligation); no reference is
        // made.
        unsafe { &raw mut (*head.cast::<Slot<T>>()).value }
    }
}

/// The per-type operations on a type-erased `*mut Slot<T>`.
pub(super) struct SlotVtable {
    pub(super) release: unsafe fn(*mut Head) -> Option<Result<(), String>>,
    pub(super) drop: unsafe fn(*mut Head),
    pub(super) type_name: fn() -> &'static str,
}

impl<T: Local> Slot<T> {
    pub(super) const VTABLE: SlotVtable = SlotVtable {
        release: Self::release,
        drop: Self::drop,
        type_name: core::any::type_name::<T>,
    };

    /// Runs `Local::release` if the value is bound and free: `None` if not,
    /// else the panic message if it panicked. Held meanwhile, so a callback
    /// from `release` cannot borrow the value again.
    ///
    /// # Safety
    ///
    /// `slot` is a live `Slot<T>` of the calling thread's context.
    unsafe fn release(slot: *mut Head) -> Option<Result<(), String>> {
        let slot = slot.cast::<Slot<T>>();
        // SAFETY: live and ours (caller obligation); `&mut value` only while
        // held.
        unsafe {
            if (*slot).head.state != READY {
                return None;
            }
            (*slot).head.state = OUTSIDE;
            let outcome = catch_unwind(AssertUnwindSafe(|| (*slot).value.release()));
            (*slot).head.state = UNBOUND;
            (*slot).head.bound = false;
            Some(outcome.map_err(payload_message))
        }
    }

    /// # Safety
    ///
    /// `slot` came from `Box::into_raw(Box<Slot<T>>)` and is not used again.
    unsafe fn drop(slot: *mut Head) {
        // SAFETY: caller obligation.
        drop(unsafe { Box::from_raw(slot.cast::<Slot<T>>()) });
    }
}
