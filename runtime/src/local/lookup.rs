//! Taking a context's `#[local]` value for a call, creating and binding it
//! on first use.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::Local;
use super::borrow::LocalRef;
use super::holder::Holder;
use super::key::{LocalKey, held_in};
use super::slot::{ABSENT, DEEPEST, Head, READY, Slot, UNBOUND, absent, constructing, free_hold};
use super::table::{Locals, NOTHING};
use crate::failure::Failure;
use crate::stack::ThreadStack;

#[cold]
fn in_use<T>() -> Failure {
    Failure::new(format!(
        "#[local] value `{}` is already in use by an outer call on this thread",
        core::any::type_name::<T>()
    ))
}

/// A call asks for a `#[local]` type it holds already (two parameters name
/// it through two paths or an alias).
#[cold]
fn taken_twice<T>() -> Failure {
    Failure::new(format!(
        "#[local] value `{}` is taken twice by one call: two #[local] parameters name the same \
         type; take it once",
        core::any::type_name::<T>()
    ))
}

impl Locals {
    /// For the outermost call of an idle context: `key`'s value, if it exists
    /// and is bound, with the entry word that holds it
    /// ([`holding`](super::holding) its index).
    ///
    /// # Safety
    ///
    /// As for `get`, and the context is idle: the value is for the call that
    /// starts on it next.
    #[hot_path]
    pub(crate) unsafe fn get_ready<T: Local>(&self, key: &LocalKey<T>) -> Option<(u64, *mut T)> {
        let entry = key.entry();
        // `last` is bound and `READY` (no call runs); an unlooked-up key is 0.
        let mut head = self.last_slot.get();
        if entry != self.last.get() {
            crate::hint::rarely_taken();
            let index = held_in(entry);
            // SAFETY: owner (caller obligation); the borrow ends here.
            head = *unsafe { &*self.table.get() }.get(index as usize)?;
            // SAFETY: as in `get`: a `READY` entry is a live slot of `T`; read.
            if unsafe { (*head).state } != READY {
                return None;
            }
            self.last.set(entry);
            self.last_slot.set(head);
        }
        // SAFETY: a live slot of `T`: a `READY` entry of `T`'s index, or the
        // one remembered as such.
        Some((entry, unsafe { Slot::value_at(head) }))
    }

    /// True when `head` (at `index`) is bound and free; `held` is the index
    /// the outermost call holds (0 for none).
    ///
    /// # Safety
    ///
    /// `head` is a live slot or a sentinel of this context, on its thread.
    #[hot_path]
    unsafe fn is_free(head: *mut Head, index: u32, held: u32) -> bool {
        // SAFETY: caller obligation.
        unsafe { (*head).state == READY && index != held }
    }

    /// This context's `T`, created and bound on first use, for the call at
    /// `depth` (at least 1) marked `caller`; `held` is the entry word's held
    /// index. A hold whose call is certainly gone (`Holder::is_gone`) is
    /// stale: the value is free.
    ///
    /// # Safety
    ///
    /// Only the context's owner, from the running call marked `caller`, with
    /// its entry word's `held` index.
    #[hot_path]
    pub(crate) unsafe fn get<T: Local>(
        &self,
        key: &LocalKey<T>,
        depth: u32,
        held: u32,
        caller: Holder,
        stack: &ThreadStack,
    ) -> Result<LocalRef<'_, T>, Failure> {
        debug_assert!((1..=DEEPEST).contains(&depth));
        // 0 before the lookup: a sentinel or missing entry.
        let index = key.looked_up();
        // SAFETY: owner (caller obligation); the borrow ends before user code.
        if let Some(&head) = unsafe { &*self.table.get() }.get(index as usize) {
            // SAFETY: entries are live slots (freed only after leaving the
            // table) or sentinels, this thread's. A `READY` entry is a slot of
            // `T` (as the key is `T`'s); only its head is written.
            unsafe {
                if Self::is_free(head, index, held) {
                    self.hold(head, depth, caller);
                    return Ok(LocalRef::held_in_state(head));
                }
            }
        }
        // SAFETY: forwarded caller obligation.
        let head = unsafe { self.get_slow(key, depth, held, caller, stack) }?;
        // SAFETY: `get_slow` returns a live, bound slot of `T`, held.
        Ok(unsafe { LocalRef::held_in_state(head) })
    }

    /// `get` when the value is not ready (no index or value yet, not bound,
    /// or held): `T`'s slot, now held, or the failure.
    ///
    /// # Safety
    ///
    /// As for `get`.
    #[cold]
    #[inline(never)]
    unsafe fn get_slow<T: Local>(
        &self,
        key: &LocalKey<T>,
        depth: u32,
        held: u32,
        caller: Holder,
        stack: &ThreadStack,
    ) -> Result<*mut Head, Failure> {
        let index = key.index();
        let held_outermost = index == held;
        let index = index as usize;
        let head = {
            // SAFETY: owner (caller obligation); no user code inside.
            let table = unsafe { &mut *self.table.get() };
            if table.len() <= index {
                let mut grown = core::mem::take(table).into_vec();
                grown.resize(index + 1, absent());
                *table = grown.into_boxed_slice();
            }
            table[index]
        };
        // SAFETY: a live slot or a sentinel (as in `get`), read.
        let head = match unsafe { (*head).state } {
            // SAFETY: owner (caller obligation).
            ABSENT => unsafe { self.create::<T>(index) },
            _ => head,
        };
        // SAFETY: a live slot of `T` or the constructing sentinel (read only),
        // this thread's. An outer call may hold a `LocalRef` to the value, so
        // only the head is accessed, and the value is borrowed (by `bind`) only
        // when not held.
        unsafe {
            let state = (*head).state;
            if (1..=DEEPEST).contains(&state) && (*head).holder.is_gone(caller, stack) {
                // A stale hold: its call is gone.
                free_hold(head);
            }
            match (*head).state {
                _ if held_outermost => return Err(in_use::<T>()),
                READY => self.hold(head, depth, caller),
                UNBOUND => {
                    // Held before `bind`, which may call back into Rust.
                    self.hold(head, depth, caller);
                    let slot = head.cast::<Slot<T>>();
                    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| (*slot).value.bind())) {
                        (*head).state = UNBOUND;
                        std::panic::resume_unwind(payload);
                    }
                    (*head).bound = true;
                    self.bound.set(self.bound.get() + 1);
                }
                _ if (*head).holder.call == caller.call => return Err(taken_twice::<T>()),
                _ => return Err(in_use::<T>()),
            }
        }
        Ok(head)
    }

    /// Holds the free value at `head` for the call at `depth` marked `caller`,
    /// and forgets it as `last`, so the fast path cannot take it meanwhile.
    ///
    /// # Safety
    ///
    /// `head` is a live slot of this context, on its thread, with no reference
    /// to its head.
    #[hot_path]
    unsafe fn hold(&self, head: *mut Head, depth: u32, caller: Holder) {
        // SAFETY: caller obligation.
        unsafe {
            (*head).state = depth;
            (*head).holder = caller;
        }
        if head == self.last_slot.get() {
            self.last.set(NOTHING);
        }
    }

    /// Creates this context's `T` and puts its slot at `index`.
    ///
    /// # Safety
    ///
    /// Only the context's owner.
    #[cold]
    unsafe fn create<T: Local>(&self, index: usize) -> *mut Head {
        // A re-entrant request for `T` from `default` finds the sentinel
        // rather than recurse.
        // SAFETY: owner (caller obligation); no user code inside. (Likewise
        // below: the table may grow while `default` runs, never shrink.)
        unsafe { (&mut *self.table.get())[index] = constructing() };
        let value = catch_unwind(T::default);
        let value = value.unwrap_or_else(|payload| {
            // SAFETY: as above.
            unsafe { (&mut *self.table.get())[index] = absent() };
            std::panic::resume_unwind(payload)
        });
        let slot = Box::into_raw(Box::new(Slot {
            head: Head {
                state: UNBOUND,
                bound: false,
                holder: Holder::NONE,
                vtable: Some(&Slot::<T>::VTABLE),
            },
            value,
        }))
        .cast::<Head>();
        // SAFETY: as above.
        unsafe { (&mut *self.table.get())[index] = slot };
        slot
    }
}
