//! Letting go of a context's `#[local]` values: `Local::release`, the
//! holds of gone calls, and abandoning the values in a `fork` child.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::holder::Holder;
use super::slot::{DEEPEST, absent, free_hold};
use super::table::{Locals, NOTHING};
use crate::diag;
use crate::stack::ThreadStack;

impl Locals {
    /// True when a value is bound: releasing has a `Local::release` to run.
    ///
    /// # Safety
    ///
    /// Only the context's owner.
    #[inline]
    pub(crate) unsafe fn has_values(&self) -> bool {
        self.bound.get() != 0
    }

    /// Runs `Local::release` on every bound value; one that panicked is
    /// dropped (its state is unknown) and the message printed.
    ///
    /// # Safety
    ///
    /// Only the context's owner, while no call holds a value through the entry
    /// word (its state is `READY`, which `release` takes for free), and no
    /// `LocalRef` of the context is alive.
    #[inline]
    pub(crate) unsafe fn release_all(&self) {
        // SAFETY: forwarded caller obligation.
        if !unsafe { self.has_values() } {
            return;
        }
        // SAFETY: forwarded caller obligation.
        unsafe { self.release_each() }
    }

    /// `release_all` of a context that has values.
    ///
    /// # Safety
    ///
    /// As for `release_all`.
    #[cold]
    #[inline(never)]
    unsafe fn release_each(&self) {
        // SAFETY: owning thread; every call that held a value through its
        // state is gone (caller obligations).
        unsafe { self.free_every_hold() };
        let mut index = 0;
        loop {
            // SAFETY: owning thread (caller obligation); a short borrow. A
            // `release` may call back and add slots: they are visited too.
            let Some(&head) = unsafe { &*self.table.get() }.get(index) else {
                return;
            };
            index += 1;
            // SAFETY: a live slot or a sentinel (read only).
            let Some(vtable) = (unsafe { (*head).vtable }) else {
                continue;
            };
            if head == self.last_slot.get() {
                // About to stop being bound (and maybe to be freed).
                self.last.set(NOTHING);
            }
            // SAFETY: the slot is live and of the vtable's type.
            let Some(released) = (unsafe { (vtable.release)(head) }) else {
                continue;
            };
            self.bound.set(self.bound.get() - 1);
            if let Err(message) = released {
                diag::report(&format!(
                    "callgate: Local::release of `{}` panicked: {message}; the value was dropped",
                    (vtable.type_name)()
                ));
                // SAFETY: owning thread; a short borrow.
                unsafe { (&mut *self.table.get())[index - 1] = absent() };
                // SAFETY: the slot was just taken out of the table, so it is
                // freed exactly once.
                let dropped = catch_unwind(AssertUnwindSafe(|| unsafe { (vtable.drop)(head) }));
                if dropped.is_err() {
                    diag::abort_with("callgate: dropping a #[local] value panicked; aborting");
                }
            }
        }
    }

    /// True when a value is held through its state by a call that may
    /// still run once the outermost call is over (`Holder::is_gone`): one
    /// suspended on another stack of the thread.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this, with its
    /// `stack`, as its outermost call returns.
    #[cold]
    pub(crate) unsafe fn held_past_the_outermost_call(&self, stack: &ThreadStack) -> bool {
        // SAFETY: owning thread (caller obligation); a short borrow with no
        // user code inside.
        unsafe { &*self.table.get() }.iter().any(|&head| {
            // SAFETY: a live slot or a sentinel, only read; a sentinel's
            // state is never a depth.
            unsafe {
                (1..=DEEPEST).contains(&(*head).state)
                    && !(*head).holder.is_gone(Holder::OVER, stack)
            }
        })
    }

    /// Frees every value held by a call through its state: those calls are
    /// gone. (A hold through the entry word is the context's to end.)
    ///
    /// # Safety
    ///
    /// - Only the thread that owns the context may call this.
    /// - No call that holds a value through its state can run again: every
    ///   `LocalRef` they made lives in a frame that is gone.
    #[cold]
    pub(crate) unsafe fn free_every_hold(&self) {
        // SAFETY: owning thread (caller obligation); a short borrow with no
        // user code inside.
        for &head in unsafe { &*self.table.get() } {
            // SAFETY: a live slot or a sentinel, touched only by this
            // thread; a sentinel's state is never a depth, so only slots'
            // heads are written.
            unsafe {
                let state = (*head).state;
                if (1..=DEEPEST).contains(&state) {
                    free_hold(head);
                }
            }
        }
    }

    /// Abandons (leaks) every value: the thread the context served does not
    /// exist in this `fork` child, and neither `release` nor `Drop` may act
    /// on its resources.
    ///
    /// # Safety
    ///
    /// No other thread can reach the context (the caller is the only thread
    /// of a `fork` child, and the context is not its own).
    #[cfg(unix)]
    pub(crate) unsafe fn abandon(&self) {
        // SAFETY: nobody else can reach the context (caller obligation).
        unsafe { *self.table.get() = Box::new([]) };
        self.bound.set(0);
        self.last.set(NOTHING);
    }
}
