//! `#[local]` values: per-thread state a callback receives as `&mut T`
//! without it being part of the C signature.

use core::any::TypeId;
use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::boundary::Failure;

/// Per-thread state for `#[local]` callback parameters.
///
/// Each thread context owns at most one value of each `Local` type, created
/// with [`Default`] on the first call that asks for it. Contexts are recycled
/// when threads exit, so **a value created for one thread may later serve
/// another**: [`bind`](Local::bind) runs whenever the value starts serving a
/// thread and [`release`](Local::release) when that thread lets go of it (it
/// exited, or an `attach = per_call` callback returned).
///
/// ```
/// #[derive(Default)]
/// struct Scratch {
///     buf: Vec<f64>,
/// }
///
/// impl callgate::Local for Scratch {
///     fn release(&mut self) {
///         // Keep the allocation for the next thread, drop the contents.
///         self.buf.clear();
///     }
/// }
/// ```
///
/// A panic in `default`, `bind` or `release` never unwinds into C: in a call
/// it becomes that call's panic fallback; in `release` (which runs outside any
/// call) the value is dropped and the message written to standard error.
pub trait Local: Default + Send + 'static {
    /// The value is about to serve the calling thread (for example: attach
    /// that thread to a JVM). Runs on that thread, inside the first call that
    /// uses the value after the thread was bound.
    fn bind(&mut self) {}

    /// The thread the value served let go of it: it exited, or an
    /// `attach = per_call` callback returned. Runs on that thread.
    fn release(&mut self) {}
}

/// A type-erased `Slot<T>`.
trait ErasedSlot: Send {
    /// Runs `Local::release` if the value is bound. Returns the panic message
    /// if it panicked.
    fn release(&mut self) -> Result<(), String>;
    fn type_name(&self) -> &'static str;
}

struct Slot<T> {
    value: T,
    in_use: bool,
    bound: bool,
}

impl<T: Local> ErasedSlot for Slot<T> {
    fn release(&mut self) -> Result<(), String> {
        if !core::mem::take(&mut self.bound) {
            return Ok(());
        }
        catch_unwind(AssertUnwindSafe(|| self.value.release()))
            .map_err(crate::boundary::payload_message)
    }

    fn type_name(&self) -> &'static str {
        core::any::type_name::<T>()
    }
}

/// The `#[local]` values of one context.
///
/// Slots are boxed and referred to by raw pointer, so a `LocalRef` held by an
/// outer call stays valid while a nested call adds slots.
pub(crate) struct Locals {
    slots: UnsafeCell<Vec<(TypeId, *mut dyn ErasedSlot)>>,
}

// SAFETY: the slots are owned boxes of `Send` values (`ErasedSlot: Send`);
// the raw pointers only avoid `Box`'s uniqueness so a `LocalRef` can coexist
// with a nested lookup. Moving `Locals` to another thread moves the boxes.
unsafe impl Send for Locals {}

impl Locals {
    pub(crate) const fn new() -> Locals {
        Locals {
            slots: UnsafeCell::new(Vec::new()),
        }
    }

    /// This context's `T`, created and bound on first use.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this.
    pub(crate) unsafe fn get<T: Local>(&self) -> Result<LocalRef<'_, T>, Failure> {
        let id = TypeId::of::<T>();
        // SAFETY: the owning thread is the only one touching `slots` (caller
        // obligation), and no reference into the Vec outlives this function.
        let slots = unsafe { &mut *self.slots.get() };
        let slot = match slots.iter().find(|(slot_id, _)| *slot_id == id) {
            Some(&(_, slot)) => slot.cast::<Slot<T>>(),
            None => {
                let slot: Box<Slot<T>> = Box::new(Slot {
                    value: T::default(),
                    in_use: false,
                    bound: false,
                });
                let slot = Box::into_raw(slot);
                slots.push((id, slot as *mut dyn ErasedSlot));
                slot
            }
        };
        // SAFETY: the slot's TypeId is `T`'s, so the cast above is right; the
        // slot is boxed, freed only by `Drop` of `Locals`, and only this
        // thread touches it. An outer call may hold a `LocalRef` to it, so
        // only the `in_use` field is read (no reference to the whole slot)
        // until we know nobody borrows the value.
        if unsafe { (*slot).in_use } {
            return Err(Failure::new(format!(
                "#[local] value `{}` is already in use by an outer call on this thread",
                core::any::type_name::<T>()
            )));
        }
        // SAFETY: as above, and `in_use` is false, so no `LocalRef` exists.
        let state = unsafe { &mut *slot };
        // Marked in use before `bind` runs: `bind` may call back into Rust.
        state.in_use = true;
        if !state.bound {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| state.value.bind())) {
                state.in_use = false;
                std::panic::resume_unwind(payload);
            }
            state.bound = true;
        }
        Ok(LocalRef {
            slot,
            _owner: PhantomData,
        })
    }

    /// Runs `Local::release` on every bound value. A value whose `release`
    /// panicked is dropped (its state is unknown) and the message printed.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this, and no
    /// `LocalRef` of this context may be alive.
    pub(crate) unsafe fn release_all(&self) {
        // SAFETY: owning thread, no outstanding `LocalRef` (caller obligations).
        let slots = unsafe { &mut *self.slots.get() };
        slots.retain(|&(_, slot)| {
            // SAFETY: the slot is live and exclusively ours (see above).
            let state = unsafe { &mut *slot };
            match state.release() {
                Ok(()) => true,
                Err(message) => {
                    crate::boundary::report(&format!(
                        "callgate: Local::release of `{}` panicked: {message}; the value was dropped",
                        state.type_name()
                    ));
                    // SAFETY: the slot came from `Box::into_raw` and is removed
                    // from the Vec by this `retain`, so it is freed once.
                    let dropped = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(slot) })));
                    if dropped.is_err() {
                        crate::abort_with("callgate: dropping a #[local] value panicked; aborting");
                    }
                    false
                }
            }
        });
    }
}

impl Drop for Locals {
    fn drop(&mut self) {
        for &(_, slot) in self.slots.get_mut().iter() {
            // SAFETY: every slot came from `Box::into_raw` and is freed only here.
            drop(unsafe { Box::from_raw(slot) });
        }
    }
}

/// A `#[local]` value borrowed by one call; other calls on the same thread
/// that ask for the same type get an error until it is dropped.
pub struct LocalRef<'a, T> {
    slot: *mut Slot<T>,
    _owner: PhantomData<&'a mut T>,
}

impl<T> Deref for LocalRef<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: `in_use` guarantees this is the only reference to the value.
        unsafe { &(*self.slot).value }
    }
}

impl<T> DerefMut for LocalRef<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: `in_use` guarantees this is the only reference to the value.
        unsafe { &mut (*self.slot).value }
    }
}

impl<T> Drop for LocalRef<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the slot outlives the borrow; only the owning thread touches
        // it, and no other reference to `in_use` exists now.
        unsafe { (*self.slot).in_use = false };
    }
}
