//! `#[local]` values: per-thread state a callback receives as `&mut T`
//! without it being part of the C signature.

use core::any::TypeId;
use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::diag;
use crate::failure::{Failure, payload_message};

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

/// The type-independent head of every slot, reachable through the
/// type-erased pointer (`Slot` is `repr(C)` with the head first).
struct Head {
    /// Who holds `&mut value` right now: [`FREE`], the depth of the call
    /// that borrowed it (its `LocalRef`, or its `bind`), or [`OUTSIDE`]
    /// for a `release` that runs outside every call.
    holder: u32,
    /// `bind` ran for the thread the context serves now.
    bound: bool,
}

/// Nobody holds the value.
const FREE: u32 = 0;
/// `release` holds the value, outside every call.
const OUTSIDE: u32 = u32::MAX;

#[repr(C)]
struct Slot<T> {
    head: Head,
    value: T,
}

/// The per-type operations on a type-erased `*mut Slot<T>`.
struct SlotVtable {
    release: unsafe fn(*mut ()) -> Result<(), String>,
    drop: unsafe fn(*mut ()),
    type_name: fn() -> &'static str,
}

impl<T: Local> Slot<T> {
    const VTABLE: SlotVtable = SlotVtable {
        release: Self::release,
        drop: Self::drop,
        type_name: core::any::type_name::<T>,
    };

    /// Runs `Local::release` if the value is bound; returns the panic
    /// message if it panicked. The slot is held meanwhile, so a
    /// callback made from `release` cannot borrow the value a second time.
    ///
    /// # Safety
    ///
    /// `slot` is a live `Slot<T>` of the calling thread's context.
    unsafe fn release(slot: *mut ()) -> Result<(), String> {
        let slot = slot.cast::<Slot<T>>();
        // SAFETY: live and ours (caller obligation); only fields are touched
        // through the raw pointer, and `&mut value` only while held.
        unsafe {
            if !(*slot).head.bound || (*slot).head.holder != FREE {
                return Ok(());
            }
            (*slot).head.holder = OUTSIDE;
            let outcome = catch_unwind(AssertUnwindSafe(|| (*slot).value.release()));
            (*slot).head.holder = FREE;
            (*slot).head.bound = false;
            outcome.map_err(payload_message)
        }
    }

    /// # Safety
    ///
    /// `slot` came from `Box::into_raw(Box<Slot<T>>)` and is not used again.
    unsafe fn drop(slot: *mut ()) {
        // SAFETY: caller obligation.
        drop(unsafe { Box::from_raw(slot.cast::<Slot<T>>()) });
    }
}

#[derive(Clone, Copy)]
struct Entry {
    id: TypeId,
    slot: *mut (),
    vtable: &'static SlotVtable,
}

/// The `#[local]` values of one context.
///
/// Slots are boxed and referred to by raw pointer, and the `Vec`s are only
/// borrowed for short moments in which no user code runs: a `LocalRef` held
/// by an outer call stays valid while `Default`, `bind`, `release` or a
/// nested callback adds slots.
pub(crate) struct Locals {
    slots: UnsafeCell<Vec<Entry>>,
    /// Types whose `Default::default` is running, to refuse a re-entrant
    /// request for the same type (it would recurse forever).
    constructing: UnsafeCell<Vec<TypeId>>,
}

// SAFETY: the slots are owned boxes of `Send` values (`Local: Send`); the
// raw pointers only avoid `Box`'s uniqueness so a `LocalRef` can coexist
// with a nested lookup. Moving `Locals` to another thread moves the boxes.
unsafe impl Send for Locals {}

#[cold]
fn in_use<T>() -> Failure {
    Failure::new(format!(
        "#[local] value `{}` is already in use by an outer call on this thread",
        core::any::type_name::<T>()
    ))
}

impl Locals {
    pub(crate) const fn new() -> Locals {
        Locals {
            slots: UnsafeCell::new(Vec::new()),
            constructing: UnsafeCell::new(Vec::new()),
        }
    }

    /// This context's `T`, created and bound on first use, for the call
    /// running at `depth` (at least 1).
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this.
    pub(crate) unsafe fn get<T: Local>(&self, depth: u32) -> Result<LocalRef<'_, T>, Failure> {
        let id = TypeId::of::<T>();
        // SAFETY: owning thread (caller obligation); the borrow ends before
        // any user code runs.
        let found = unsafe { &*self.slots.get() }
            .iter()
            .find(|entry| entry.id == id)
            .map(|entry| entry.slot);
        let slot = match found {
            // SAFETY: the entry's TypeId is `T`'s, so it holds a `Slot<T>`.
            Some(slot) => slot.cast::<Slot<T>>(),
            // SAFETY: owning thread (caller obligation).
            None => unsafe { self.create::<T>() }?,
        };
        // SAFETY: the slot is live (freed only by `Drop` or `release_all` of
        // `Locals`) and only this thread touches it. An outer call may hold a
        // `LocalRef` to it, so only fields are accessed through the raw
        // pointer, and `&mut value` is created only when it is not in use.
        unsafe {
            if (*slot).head.holder != FREE {
                return Err(in_use::<T>());
            }
            // Held before `bind` runs: `bind` may call back into Rust.
            (*slot).head.holder = depth;
            if !(*slot).head.bound {
                if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (*slot).value.bind())) {
                    (*slot).head.holder = FREE;
                    std::panic::resume_unwind(payload);
                }
                (*slot).head.bound = true;
            }
        }
        Ok(LocalRef {
            slot,
            _owner: PhantomData,
        })
    }

    /// Creates this context's `T` with `Default` and adds its slot.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this.
    #[cold]
    unsafe fn create<T: Local>(&self) -> Result<*mut Slot<T>, Failure> {
        let id = TypeId::of::<T>();
        {
            // SAFETY: owning thread; a short borrow with no user code inside.
            let constructing = unsafe { &mut *self.constructing.get() };
            if constructing.contains(&id) {
                return Err(in_use::<T>());
            }
            constructing.push(id);
        }
        let value = catch_unwind(T::default);
        // SAFETY: as above.
        unsafe { &mut *self.constructing.get() }.retain(|constructing| *constructing != id);
        let value = value.unwrap_or_else(|payload| std::panic::resume_unwind(payload));
        let slot = Box::into_raw(Box::new(Slot {
            head: Head {
                holder: FREE,
                bound: false,
            },
            value,
        }));
        let entry = Entry {
            id,
            slot: slot.cast(),
            vtable: &Slot::<T>::VTABLE,
        };
        // SAFETY: as above.
        unsafe { &mut *self.slots.get() }.push(entry);
        Ok(slot)
    }

    /// Runs `Local::release` on every bound value. A value whose `release`
    /// panicked is dropped (its state is unknown) and the message printed.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this.
    pub(crate) unsafe fn release_all(&self) {
        let mut index = 0;
        loop {
            // SAFETY: owning thread (caller obligation); a short borrow. A
            // `release` may call back and add slots: they are visited too.
            let Some(entry) = unsafe { &*self.slots.get() }.get(index).copied() else {
                return;
            };
            // SAFETY: the entry's slot is live and of the vtable's type.
            match unsafe { (entry.vtable.release)(entry.slot) } {
                Ok(()) => index += 1,
                Err(message) => {
                    diag::report(&format!(
                        "callgate: Local::release of `{}` panicked: {message}; the value was dropped",
                        (entry.vtable.type_name)()
                    ));
                    // SAFETY: owning thread; a short borrow.
                    unsafe { &mut *self.slots.get() }.remove(index);
                    // SAFETY: the slot was just removed from the list, so it
                    // is freed exactly once.
                    let dropped = catch_unwind(AssertUnwindSafe(|| unsafe {
                        (entry.vtable.drop)(entry.slot)
                    }));
                    if dropped.is_err() {
                        diag::abort_with("callgate: dropping a #[local] value panicked; aborting");
                    }
                }
            }
        }
    }

    /// Frees the values held by calls deeper than `depth`: those calls are
    /// gone (their frames were abandoned), so their `&mut` borrows can
    /// never be used again. `depth` 0 frees every value held by a call.
    ///
    /// # Safety
    ///
    /// - Only the thread that owns the context may call this.
    /// - No call deeper than `depth` is running on the thread: every
    ///   `LocalRef` they made lives in a frame that is gone.
    #[cold]
    pub(crate) unsafe fn free_held_below(&self, depth: u32) {
        // SAFETY: owning thread (caller obligation); a short borrow with no
        // user code inside.
        for entry in unsafe { &*self.slots.get() } {
            let head = entry.slot.cast::<Head>();
            // SAFETY: every slot starts with its `Head` (`repr(C)`), is
            // live, and only this thread touches it; only the head is
            // accessed, never the value a running call may borrow.
            unsafe {
                if (*head).holder > depth && (*head).holder != OUTSIDE {
                    (*head).holder = FREE;
                }
            }
        }
    }

    /// Abandons every value: the thread the context served does not exist
    /// in this `fork` child, so neither `release` nor `Drop` may run on its
    /// behalf (either could act on that thread's resources). The values are
    /// leaked; the next thread gets new ones from `Default`.
    ///
    /// # Safety
    ///
    /// No other thread can reach the context (the caller is the only thread
    /// of a `fork` child, and the context is not its own).
    #[cfg(unix)]
    pub(crate) unsafe fn abandon(&self) {
        // SAFETY: nobody else can reach the context (caller obligation).
        unsafe {
            (*self.slots.get()).clear();
            (*self.constructing.get()).clear();
        }
    }
}

impl Drop for Locals {
    fn drop(&mut self) {
        for entry in self.slots.get_mut().drain(..) {
            // SAFETY: every slot is freed only here or in `release_all`,
            // which removes it from the list first.
            unsafe { (entry.vtable.drop)(entry.slot) };
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
        // SAFETY: the slot's holder guarantees this is the only reference to
        // the value.
        unsafe { &(*self.slot).value }
    }
}

impl<T> DerefMut for LocalRef<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the slot's holder guarantees this is the only reference to
        // the value.
        unsafe { &mut (*self.slot).value }
    }
}

impl<T> Drop for LocalRef<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the slot outlives the borrow; only the owning thread touches
        // it, and no other reference to its head exists now.
        unsafe { (*self.slot).head.holder = FREE };
    }
}
