//! A context's value of one `Local` type, behind a type-erased head whose
//! state word says who may take it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::Local;
use super::holder::Holder;
use crate::failure::payload_message;

/// The state word of a slot: who may take the value.
///
/// [`READY`] is the only value the fast path accepts; a call that takes the
/// value stores its depth, and its `LocalRef` stores `READY` back.
pub(super) type State = u32;

/// Bound to the thread the context serves, and nobody holds it.
pub(super) const READY: State = 0;
/// The deepest call a state can name: `1..=DEEPEST` is held by the call
/// running at that depth (its `LocalRef`, or its `bind`).
pub(super) const DEEPEST: State = u32::MAX - 4;
/// `Default::default` is running for this type: the entry is a sentinel.
const CONSTRUCTING: State = u32::MAX - 3;
/// No value of this type yet: the entry is a sentinel.
pub(super) const ABSENT: State = u32::MAX - 2;
/// `release` holds the value, outside every call.
const OUTSIDE: State = u32::MAX - 1;
/// Nobody holds the value, and `bind` has not run for the thread the
/// context serves.
pub(super) const UNBOUND: State = u32::MAX;

/// The type-independent head of every slot, reachable through the
/// type-erased pointer (`Slot` is `repr(C)` with the head first).
#[repr(C)]
pub(super) struct Head {
    pub(super) state: State,
    /// `bind` ran for the thread the context serves (so a held value goes
    /// back to `READY`, not `UNBOUND`, when its call is found gone).
    pub(super) bound: bool,
    /// While the state is a depth: the holding call, which tells whether
    /// it is certainly gone (see `Locals::get`).
    pub(super) holder: Holder,
    /// The value's operations; `None` for the two sentinels.
    pub(super) vtable: Option<&'static SlotVtable>,
}

/// The table entry of a type with no value yet. Never written: its state
/// is neither `READY` nor a depth, the only states anything overwrites.
static ABSENT_SLOT: Head = Head {
    state: ABSENT,
    bound: false,
    holder: Holder::NONE,
    vtable: None,
};

/// The table entry of a type whose `Default::default` is running. Never
/// written, as `ABSENT_SLOT`.
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

    /// Runs `Local::release` if the value is bound and free: `None` if it
    /// did not, else the panic message if it panicked. The slot is held
    /// meanwhile, so a callback made from `release` cannot borrow the
    /// value a second time.
    ///
    /// # Safety
    ///
    /// `slot` is a live `Slot<T>` of the calling thread's context.
    unsafe fn release(slot: *mut Head) -> Option<Result<(), String>> {
        let slot = slot.cast::<Slot<T>>();
        // SAFETY: live and ours (caller obligation); only fields are touched
        // through the raw pointer, and `&mut value` only while held.
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
