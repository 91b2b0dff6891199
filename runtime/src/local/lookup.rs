//! Taking a context's `#[local]` value for a call: on an idle context
//! through the entry word (`get_ready`), else through the slot's state
//! (`get`), creating and binding the value on first use.

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

/// The error of a call that asks for a `#[local]` type it holds already:
/// two of its parameters name one type (through two paths or an alias,
/// which `#[c_callback]` refuses at compile time too).
#[cold]
fn taken_twice<T>() -> Failure {
    Failure::new(format!(
        "#[local] value `{}` is taken twice by one call: two #[local] parameters name the same \
         type; take it once",
        core::any::type_name::<T>()
    ))
}

impl Locals {
    /// For the outermost call of an idle context: `key`'s value, if it
    /// exists and is bound to the thread, with the entry word that holds
    /// it ([`holding`](super::holding) its index). The call's entry records
    /// the hold and its leave ends it.
    ///
    /// # Safety
    ///
    /// As for `get`, and no call is running on the context (so none holds
    /// a value): the value is for the call that starts on it next.
    #[hot_path]
    pub(crate) unsafe fn get_ready<T: Local>(&self, key: &LocalKey<T>) -> Option<(u64, *mut T)> {
        let entry = key.entry();
        // The remembered value is bound and, as no call runs, `READY`
        // (`last`); a key not looked up yet is 0, never `last`.
        let mut head = self.last_slot.get();
        if entry != self.last.get() {
            crate::hint::rarely_taken();
            let index = held_in(entry);
            // SAFETY: owning thread (caller obligation); the borrow ends here.
            head = *unsafe { &*self.table.get() }.get(index as usize)?;
            // SAFETY: as in `get`: a `READY` entry is a live slot of `T`. It is
            // only read.
            if unsafe { (*head).state } != READY {
                return None;
            }
            self.last.set(entry);
            self.last_slot.set(head);
        }
        // SAFETY: `head` is a live slot of `T` (a `READY` entry of `T`'s
        // index, or the one remembered as such).
        Some((entry, unsafe { Slot::value_at(head) }))
    }

    /// True when `head`, the entry at `index`, is a value bound to the
    /// thread that no call holds; `held` is the index the outermost call
    /// holds (0 for none).
    ///
    /// # Safety
    ///
    /// `head` is a live slot or a sentinel of this context, on its owning
    /// thread.
    #[hot_path]
    unsafe fn is_free(head: *mut Head, index: u32, held: u32) -> bool {
        // SAFETY: caller obligation.
        unsafe { (*head).state == READY && index != held }
    }

    /// This context's `T`, created and bound on first use, for the call
    /// running at `depth` (at least 1) marked `caller`; `held` is the
    /// index the outermost call holds through the entry word (0: none);
    /// `stack` is the owning thread's.
    ///
    /// A hold through the state whose call is certainly gone
    /// (`Holder::is_gone`) is stale: the value is free.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this, from the
    /// running call marked `caller` (its anchor holds the token), with the
    /// `held` index its entry word records.
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
        // 0 before the lookup, where the entry is a sentinel or missing.
        let index = key.looked_up();
        // SAFETY: owning thread (caller obligation); the borrow ends before
        // any user code runs.
        if let Some(&head) = unsafe { &*self.table.get() }.get(index as usize) {
            // SAFETY: entries are live slots (freed only after leaving the
            // table) or sentinels, touched only by this thread. A `READY`
            // entry is a slot (sentinels never are) of `T`, as the key is
            // `T`'s. Only its head is written; no call holds the value.
            unsafe {
                if Self::is_free(head, index, held) {
                    self.hold(head, depth, caller);
                    return Ok(LocalRef::held_in_state(head));
                }
            }
        }
        // SAFETY: forwarded caller obligation.
        let head = unsafe { self.get_slow(key, depth, held, caller, stack) }?;
        // SAFETY: `get_slow` returns a live, bound slot of `T` that it
        // marked held.
        Ok(unsafe { LocalRef::held_in_state(head) })
    }

    /// `get` when the value is not ready: no index or value yet, not
    /// bound, or held. Returns `T`'s slot, now held at `depth`, or the
    /// failure.
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
            // SAFETY: owning thread (caller obligation); a short borrow with
            // no user code inside.
            let table = unsafe { &mut *self.table.get() };
            if table.len() <= index {
                let mut grown = core::mem::take(table).into_vec();
                grown.resize(index + 1, absent());
                *table = grown.into_boxed_slice();
            }
            table[index]
        };
        // SAFETY: `head` is a live slot or a sentinel (as in `get`); a
        // sentinel is only read.
        let head = match unsafe { (*head).state } {
            // SAFETY: owning thread (caller obligation).
            ABSENT => unsafe { self.create::<T>(index) },
            _ => head,
        };
        // SAFETY: `head` is a live slot of `T` (the index is `T`'s) or the
        // constructing sentinel, which is only read; only this thread
        // touches it. An outer call may hold a `LocalRef` to the value, so
        // only the head is accessed through the raw pointer, and the value
        // is borrowed (by `bind`) only when the slot is not held.
        unsafe {
            let state = (*head).state;
            if (1..=DEEPEST).contains(&state) && (*head).holder.is_gone(caller, stack) {
                // A stale hold (see `get`): its call is gone.
                free_hold(head);
            }
            match (*head).state {
                _ if held_outermost => return Err(in_use::<T>()),
                READY => self.hold(head, depth, caller),
                UNBOUND => {
                    // Held before `bind` runs: `bind` may call back into Rust.
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

    /// Holds the free value at `head` through the slot's state for the
    /// call at `depth` marked `caller`, and forgets it as `last`, so the
    /// fast path cannot find it while held.
    ///
    /// # Safety
    ///
    /// `head` is a live slot of this context, on its owning thread, and no
    /// reference to its head exists.
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

    /// Creates this context's `T` with `Default` and puts its slot at
    /// `index` (`T`'s), which the table has.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this.
    #[cold]
    unsafe fn create<T: Local>(&self, index: usize) -> *mut Head {
        // A re-entrant request for `T` from `default` finds the sentinel:
        // it would recurse forever.
        // SAFETY: owning thread (caller obligation); a short borrow with no
        // user code inside. (So are the borrows below; the table may grow,
        // never shrink, while `default` runs: `index` stays in it.)
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
