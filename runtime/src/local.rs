//! `#[local]` values: per-thread state a callback receives as `&mut T`
//! without it being part of the C signature.
//!
//! Every `Local` type gets a small index, the same for every callback of
//! this copy of the runtime that asks for it, and each context keeps its
//! values in a table at those indices. A callback finds its index in a
//! [`LocalKey`], a `static` the `#[local]` expansion declares next to it
//! (in the form of the context entry word that holds it, see below), so
//! the lookup is a key load, a shift, a bounds check, a table load and one
//! compare of the slot's state word ([`Locals::get`]). Assigning an index,
//! creating a value, running `bind` and reporting a value in use are cold.
//!
//! A call holds the value it took so that a nested call cannot take it
//! too. Most calls record that in the slot's state word. The outermost
//! call of an idle context, which the trampoline's fast path serves,
//! records the value's index in the context's entry word instead, in the
//! store that records the call itself ([`Locals::get_ready`],
//! `Context::enter_idle_holding`): no store to the slot, whose address is
//! known only after two dependent loads. The key already holds that entry
//! word, so the fast path stores what it loaded from the key. The
//! functions that must know whether a value is free take that index as
//! `held`.
//!
//! That fast path also remembers the last value it found
//! ([`Locals::get_ready`]): a callback called again and again finds its
//! value with one compare of the key's word, without the table, the slot
//! or its state; the lookup of another value is laid out of line. The
//! remembered value is always bound and either `READY` or held through
//! the entry word by a call recorded as running, which the fast path (an
//! idle context) never sees: a hold through the slot's state forgets it,
//! and so does releasing the value.
//!
//! A hold through the slot's state records the call that took it and the
//! outermost call it ran under ([`Holder`]). It ends when that call's
//! `LocalRef` drops, or when a lookup finds the call certainly gone
//! (`Holder::is_gone`): by its own mark (`stack::Mark`), or because it
//! lies on the thread's own stack below that outermost call, which is
//! over. The hold is then *stale* and the value is taken. Nothing else
//! frees it while the thread runs, not even the return of a call it
//! started under on another stack: on one thread with several stacks, the
//! holder may be suspended there rather than gone ([`Locals::get`]).
//!
//! # Atomic orderings
//!
//! * The registry of indices is a list that only grows at its head: a new
//!   entry is published with a Release compare-exchange on the head, and
//!   every walk starts from an Acquire load of it (or the Acquire of a
//!   failed compare-exchange), so the entries it reaches are fully written.
//! * A key's index is stored and loaded `Relaxed`: it is a plain number,
//!   the same whichever thread stores it, and nothing is published with it.
//! * Everything else is owned by the context's thread: plain fields.

use core::any::TypeId;
use core::cell::{Cell, UnsafeCell};
use core::marker::PhantomData;
use core::ops::{Deref, DerefMut};
use core::ptr;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::diag;
use crate::failure::{Failure, payload_message};
use crate::stack::{Mark, ThreadStack};
use crate::sync::{AtomicPtr, AtomicU64, Ordering};

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
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a `#[local]` parameter: it does not implement `callgate::Local`",
    label = "not a `callgate::Local` type",
    note = "implement it: `impl callgate::Local for {Self} {{}}` (with `Default`, `Send` and \
            `'static`, which it requires)"
)]
pub trait Local: Default + Send + 'static {
    /// The value is about to serve the calling thread (for example: attach
    /// that thread to a JVM). Runs on that thread, inside the first call that
    /// uses the value after the thread was bound.
    fn bind(&mut self) {}

    /// The thread the value served let go of it: it exited, or an
    /// `attach = per_call` callback returned. Runs on that thread.
    fn release(&mut self) {}
}

impl<T> Default for LocalKey<T> {
    fn default() -> LocalKey<T> {
        LocalKey::new()
    }
}

/// Where the callbacks that take a `#[local] &mut T` find `T`'s index: a
/// `static` next to each of them. Empty until the first call that asks.
///
/// Aligned to 128 bytes, so it has a line pair of its own: the fast path
/// reads it on every call, and a `static` beside it that threads write (a
/// counter, say) would make each of those calls fetch it again.
#[repr(align(128))]
pub struct LocalKey<T> {
    /// `T`'s index in the registry, as the entry word of an outermost call
    /// that holds `T`'s value ([`holding`]), so that the fast path
    /// compares and stores it as it is; 0 before the index is looked up.
    entry: AtomicU64,
    _type: PhantomData<fn() -> T>,
}

impl<T> LocalKey<T> {
    /// A key whose index is looked up on first use. (No `Local` bound
    /// here: `Frame::local` reports a missing impl, once.)
    pub const fn new() -> LocalKey<T> {
        LocalKey {
            entry: AtomicU64::new(0),
            _type: PhantomData,
        }
    }
}

impl<T: Local> LocalKey<T> {
    /// `T`'s index, assigned on first use.
    #[cold]
    fn index(&self) -> u32 {
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

impl<T> LocalKey<T> {
    /// `T`'s index, or 0 before it is looked up.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn looked_up(&self) -> u32 {
        // Relaxed: a plain number (module docs).
        held_in(self.entry.load(Ordering::Relaxed))
    }
}

/// One type of the registry.
struct Registered {
    id: TypeId,
    index: u32,
    /// The entry registered before this one, or null.
    next: *const Registered,
}

/// Every `Local` type looked up so far, newest first: indices 1, 2, …
/// in registration order. Never shrinks while the library is loaded, so
/// no lock: a `fork` can never leave the child one held.
static REGISTRY: AtomicPtr<Registered> = AtomicPtr::new(ptr::null_mut());

/// The index of the type `id`, registering it if it is new: one index per
/// type for this copy of the runtime, whichever thread asks first.
#[cold]
#[inline(never)]
fn index_of(id: TypeId) -> u32 {
    // Acquire: pairs with the Release compare-exchange below (module docs).
    let mut head = REGISTRY.load(Ordering::Acquire);
    let mut fresh: *mut Registered = ptr::null_mut();
    loop {
        let mut entry = head.cast_const();
        while !entry.is_null() {
            // SAFETY: registered entries are freed only at unload, when no
            // thread runs this code; the Acquire above made them visible.
            let registered = unsafe { &*entry };
            if registered.id == id {
                if !fresh.is_null() {
                    // SAFETY: `fresh` came from `Box::into_raw` below and
                    // was never published.
                    drop(unsafe { Box::from_raw(fresh) });
                }
                return registered.index;
            }
            entry = registered.next;
        }
        let index = if head.is_null() {
            1
        } else {
            // SAFETY: as above.
            unsafe { (*head).index }
                .checked_add(1)
                .filter(|&index| index < u32::MAX)
                .unwrap_or_else(|| diag::abort_with("callgate: too many #[local] types; aborting"))
        };
        if fresh.is_null() {
            fresh = Box::into_raw(Box::new(Registered {
                id,
                index,
                next: head,
            }));
        } else {
            // SAFETY: `fresh` is ours until the compare-exchange publishes it.
            unsafe {
                (*fresh).index = index;
                (*fresh).next = head;
            }
        }
        // Release on success: publishes `fresh` (module docs); Acquire on
        // failure: the walk of the new head sees its entries.
        match REGISTRY.compare_exchange(head, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return index,
            Err(now) => head = now,
        }
    }
}

/// Frees the registry: the library is being unloaded.
///
/// # Safety
///
/// No thread runs the library's code, and none will until it is unloaded.
// Only the ELF unload hook (Linux, Android) frees the registry.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub(crate) unsafe fn free_registry() {
    // Relaxed: nobody else uses the registry (caller obligation).
    let mut entry = REGISTRY.swap(ptr::null_mut(), Ordering::Relaxed);
    while !entry.is_null() {
        // SAFETY: every entry came from `Box::into_raw` in `index_of` and is
        // reachable once; nobody uses it (caller obligation).
        let registered = unsafe { Box::from_raw(entry) };
        entry = registered.next.cast_mut();
    }
}

/// The state word of a slot: who may take the value.
///
/// [`READY`] is the only value the fast path accepts; a call that takes the
/// value stores its depth, and its `LocalRef` stores `READY` back.
type State = u32;

/// Bound to the thread the context serves, and nobody holds it.
const READY: State = 0;
/// The deepest call a state can name: `1..=DEEPEST` is held by the call
/// running at that depth (its `LocalRef`, or its `bind`).
const DEEPEST: State = u32::MAX - 4;
/// `Default::default` is running for this type: the entry is a sentinel.
const CONSTRUCTING: State = u32::MAX - 3;
/// No value of this type yet: the entry is a sentinel.
const ABSENT: State = u32::MAX - 2;
/// `release` holds the value, outside every call.
const OUTSIDE: State = u32::MAX - 1;
/// Nobody holds the value, and `bind` has not run for the thread the
/// context serves.
const UNBOUND: State = u32::MAX;

/// The type-independent head of every slot, reachable through the
/// type-erased pointer (`Slot` is `repr(C)` with the head first).
#[repr(C)]
struct Head {
    state: State,
    /// `bind` ran for the thread the context serves (so a held value goes
    /// back to `READY`, not `UNBOUND`, when its call is found gone).
    bound: bool,
    /// While the state is a depth: the holding call, which tells whether
    /// it is certainly gone (see [`Locals::get`]).
    holder: Holder,
    /// The value's operations; `None` for the two sentinels.
    vtable: Option<&'static SlotVtable>,
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

/// Ends the hold of a slot whose holding call is gone: the value is
/// `READY` again if `bind` ran for the thread, else `UNBOUND`.
///
/// # Safety
///
/// `head` is a live slot (not a sentinel) of the calling thread's context,
/// and no reference to its head exists.
unsafe fn free_hold(head: *mut Head) {
    // SAFETY: caller obligation.
    unsafe { (*head).state = if (*head).bound { READY } else { UNBOUND } };
}

fn absent() -> *mut Head {
    (&raw const ABSENT_SLOT).cast_mut()
}

fn constructing() -> *mut Head {
    (&raw const CONSTRUCTING_SLOT).cast_mut()
}

#[repr(C)]
struct Slot<T> {
    head: Head,
    value: T,
}

impl<T> Slot<T> {
    /// The value of the slot whose head is `head`; only the place is
    /// formed.
    ///
    /// # Safety
    ///
    /// `head` is the head of a live `Slot<T>`.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    unsafe fn value_at(head: *mut Head) -> *mut T {
        // SAFETY: a live slot of `T` (caller obligation); no reference is
        // made.
        unsafe { &raw mut (*head.cast::<Slot<T>>()).value }
    }
}

/// The per-type operations on a type-erased `*mut Slot<T>`.
struct SlotVtable {
    release: unsafe fn(*mut Head) -> Option<Result<(), String>>,
    drop: unsafe fn(*mut Head),
    type_name: fn() -> &'static str,
}

impl<T: Local> Slot<T> {
    const VTABLE: SlotVtable = SlotVtable {
        release: Self::release,
        drop: Self::drop,
        type_name: core::any::type_name::<T>,
    };

    /// Runs `Local::release` if the value is bound and free: `None` if it
    /// did not, else the panic message if it panicked. The slot is held meanwhile, so a
    /// callback made from `release` cannot borrow the value a second time.
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

/// The `#[local]` values of one context.
///
/// `table[i]` is the slot of the type with index `i`, or a sentinel. Slots
/// are boxed and referred to by raw pointer, and the table is only
/// borrowed for short moments in which no user code runs: a `LocalRef`
/// held by an outer call stays valid while `Default`, `bind`, `release` or
/// a nested callback grows the table.
///
/// `repr(C)`, in the order the fast path needs them: the remembered value
/// and the table come first, within 32 bytes, so that `Context` keeps them
/// in the cache line of its own hot fields.
#[repr(C)]
pub(crate) struct Locals {
    /// The key entry word ([`holding`] its index) of the value
    /// [`get_ready`](Locals::get_ready) found last, or [`NOTHING`]. While it
    /// is a key's, `last_slot` is the slot at that index, bound to the
    /// thread, and `READY` or held through the entry word by a call
    /// recorded as running, which the fast path (an idle context) never
    /// sees: a hold through the slot's state forgets it ([`Locals::hold`]),
    /// since its call may outlive its record.
    /// [`release_each`](Locals::release_each) and, in a `fork` child,
    /// `abandon`, the only ways a bound value stops being bound or leaves
    /// the table, forget it first.
    last: Cell<u64>,
    /// The slot of the value at `last`.
    last_slot: Cell<*mut Head>,
    /// A boxed slice rather than a `Vec` (two words, not three): it grows
    /// only when a new type is looked up, a cold path.
    table: UnsafeCell<Box<[*mut Head]>>,
    /// How many of the values are bound to the thread the context serves
    /// (`bind` ran, `release` has not): 0 when releasing the context has
    /// no `Local::release` to run, which the per-call fast path checks.
    bound: Cell<u32>,
}

/// The context's entry word (`Context::entry`) of an outermost call, at
/// depth 1, that holds the value at `index` (0: none). [`LocalKey`] keeps
/// its type's index in this form, so the fast path stores it as it is.
pub(crate) const fn holding(index: u32) -> u64 {
    (index as u64) << 32 | 1
}

/// The index of the value an entry word holds, or 0.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) const fn held_in(entry: u64) -> u32 {
    (entry >> 32) as u32
}

/// `Locals::last` when no value is remembered: no key's entry word (whose
/// low half is 1, or which is 0 before the lookup).
const NOTHING: u64 = u64::MAX;

/// A running call that asks for a `#[local]` value, as the hold it may
/// take records it: its mark, and the outermost call it runs under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Holder {
    /// The call's own mark.
    pub(crate) call: Mark,
    /// The number of the outermost call it runs under (`Context::calls`).
    pub(crate) outermost: u64,
    /// Where that outermost call's anchor is.
    pub(crate) outer_address: usize,
}

impl Holder {
    const NONE: Holder = Holder {
        call: Mark::new(0, 0),
        outermost: 0,
        outer_address: 0,
    };

    /// Asking from outside every call, once the outermost call is over:
    /// no mark of its own, and under no outermost call.
    const OVER: Holder = Holder {
        call: Mark::new(0, 0),
        outermost: u64::MAX,
        outer_address: 0,
    };

    /// True when this call, which took a value through the slot's state,
    /// certainly has no frame left, seen from the running call `asking`
    /// (on the thread whose stack is `stack`):
    ///
    /// * by its own mark (`Mark::holder_is_gone`);
    /// * or it is on the thread's own stack, below the outermost call it
    ///   ran under, which is on that stack too and is over (`asking` runs
    ///   under another): that call returned, or was found gone, so the
    ///   stack was left above both. This tells a call abandoned by a
    ///   `longjmp` that landed inside the outermost call even where its
    ///   token was not overwritten.
    ///
    /// The return of the outermost call alone does not tell a holder on
    /// another stack gone: on one thread with several stacks it may be
    /// suspended there (a callback on one coroutine returns while one that
    /// started after it on another is suspended).
    fn is_gone(self, asking: Holder, stack: &ThreadStack) -> bool {
        self.call.holder_is_gone(asking.call, stack)
            || (self.outermost != asking.outermost
                && self.call.address() < self.outer_address
                && stack.contains(self.call.address())
                && stack.contains(self.outer_address))
    }
}

const _: () = assert!(core::mem::offset_of!(Locals, bound) == 32);

// SAFETY: the slots are owned boxes of `Send` values (`Local: Send`) or the
// immutable sentinels; the raw pointers only avoid `Box`'s uniqueness so a
// `LocalRef` can coexist with a nested lookup. Moving `Locals` to another
// thread moves the boxes.
unsafe impl Send for Locals {}

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
    pub(crate) fn new() -> Locals {
        Locals {
            table: UnsafeCell::new(Box::new([])),
            bound: Cell::new(0),
            last: Cell::new(NOTHING),
            last_slot: Cell::new(ptr::null_mut()),
        }
    }

    /// The value of `key`'s type, with the entry word that holds it
    /// ([`holding`] its index), for the outermost call of an idle
    /// context, when it exists and is bound to the thread; `None`
    /// otherwise. The value found is remembered (`last`), so the next call
    /// for the same type only compares the key's word. Nothing else is
    /// written: the caller stores the entry word in the context as the
    /// call enters, which records the hold, and the call's leave ends it.
    /// The value comes as a pointer, for the caller to pass to the call as
    /// a `&mut T` parameter (see `boundary::outermost_holding`) and on to
    /// the body as a [`LocalRef`] that does nothing when dropped.
    ///
    /// # Safety
    ///
    /// As for `get`, and no call is running on the context (so none holds
    /// a value): the value is for the call that starts on it next.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn get_ready<T: Local>(&self, key: &LocalKey<T>) -> Option<(u64, *mut T)> {
        // Relaxed: a plain number (module docs).
        let entry = key.entry.load(Ordering::Relaxed);
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
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    unsafe fn is_free(head: *mut Head, index: u32, held: u32) -> bool {
        // SAFETY: caller obligation.
        unsafe { (*head).state == READY && index != held }
    }

    /// This context's `T`, created and bound on first use, for the call
    /// running at `depth` (at least 1) whose mark is `caller`; `held` is
    /// the index of the value the outermost call holds through the context
    /// (0 for none); `stack` is the owning thread's. The fast path: the
    /// value exists, is bound and is free.
    ///
    /// A value held through its state by a call that is certainly gone
    /// (`Holder::is_gone`, seen from `caller`) is free: that call was
    /// abandoned (`longjmp`). No other hold is taken for stale: a call
    /// that the runtime no longer records as running may still be
    /// suspended on another stack of the thread.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this, from the
    /// running call marked `caller` (its anchor holds the token), with the
    /// `held` index its entry word records.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn get<T: Local>(
        &self,
        key: &LocalKey<T>,
        depth: u32,
        held: u32,
        caller: Holder,
        stack: &ThreadStack,
    ) -> Result<LocalRef<'_, T>, Failure> {
        debug_assert!((1..=DEEPEST).contains(&depth));
        // Relaxed: a plain number (module docs). 0 before the lookup, where
        // the entry is a sentinel or missing.
        let index = key.looked_up();
        // SAFETY: owning thread (caller obligation); the borrow ends before
        // any user code runs.
        if let Some(&head) = unsafe { &*self.table.get() }.get(index as usize) {
            // SAFETY: entries are live slots (freed only by `Drop` or
            // `release_all`, which take them out of the table) or the
            // sentinels, and only this thread touches them. A `READY`
            // entry is a slot (sentinels are never `READY`) of `T`: the
            // index is `T`'s, as the key is `T`'s. Only its head is written;
            // no call holds the value.
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

    /// `get` when the value is not ready: the key has no index yet, the
    /// table is too short, the value does not exist or is not bound, or a
    /// call holds it. Returns the slot of `T`, now held at `depth`, or the
    /// "already in use" failure, made here, out of the caller's code.
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

    /// Holds the free value at `head` for the call running at `depth`,
    /// marked `caller`, through the slot's state. The fast path must not
    /// find it while it is held (its call may outlive its record, see
    /// `get`), so it is no longer the remembered value.
    ///
    /// # Safety
    ///
    /// `head` is a live slot of this context, on its owning thread, and no
    /// reference to its head exists.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
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

    /// True when a `#[local]` value is bound to the thread the context
    /// serves: releasing the context has a `Local::release` to run.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this.
    #[inline]
    pub(crate) unsafe fn has_values(&self) -> bool {
        self.bound.get() != 0
    }

    /// Runs `Local::release` on every bound value. A value whose `release`
    /// panicked is dropped (its state is unknown) and the message printed.
    ///
    /// # Safety
    ///
    /// Only the thread that owns the context may call this, while no call
    /// holds a value through the context (its `held` index is 0): a value
    /// held that way has the state `READY`, which `release` takes for
    /// free. No `LocalRef` of the context is alive: a value whose state
    /// says a call holds it was held by a call that is gone, and is freed
    /// and released.
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
        // No `LocalRef` is alive (caller obligation): every hold recorded
        // in a state is stale, and `release` skips held values.
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
    /// still run once the outermost call is over: one that is not
    /// certainly gone (`Holder::is_gone`), such as a callback suspended on
    /// another stack of the thread (green threads).
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
    /// gone, so their `&mut` borrows can never be used again. The one the
    /// outermost call holds through the context's entry word is the
    /// context's to free.
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
            // thread; a sentinel's state is never a depth, so only slots
            // are written, and only their heads, never the value a running
            // call may borrow.
            unsafe {
                let state = (*head).state;
                if (1..=DEEPEST).contains(&state) {
                    free_hold(head);
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
        unsafe { *self.table.get() = Box::new([]) };
        self.bound.set(0);
        self.last.set(NOTHING);
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
    unsafe fn held_in_state(head: *mut Head) -> LocalRef<'a, T> {
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
        // SAFETY: the hold (the slot's state, or the entry word of the call
        // that took the value) guarantees this is the only reference to it.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::Anchor;

    /// A call marked `call` under the outermost call numbered `outermost`,
    /// whose anchor is at `outer_address` (0: unknown).
    fn at(call: Mark, outermost: u64, outer_address: usize) -> Holder {
        Holder {
            call,
            outermost,
            outer_address,
        }
    }

    /// Distinct `Local` types, by number.
    #[derive(Default)]
    struct Numbered<const N: usize> {
        uses: u32,
        binds: u32,
        releases: u32,
    }

    impl<const N: usize> Local for Numbered<N> {
        fn bind(&mut self) {
            self.binds += 1;
        }

        fn release(&mut self) {
            self.releases += 1;
        }
    }

    fn ids() -> [TypeId; 12] {
        [
            TypeId::of::<[u8; 1]>(),
            TypeId::of::<[u8; 2]>(),
            TypeId::of::<[u8; 3]>(),
            TypeId::of::<[u8; 4]>(),
            TypeId::of::<[u8; 5]>(),
            TypeId::of::<[u8; 6]>(),
            TypeId::of::<[u8; 7]>(),
            TypeId::of::<[u8; 8]>(),
            TypeId::of::<[u8; 9]>(),
            TypeId::of::<[u8; 10]>(),
            TypeId::of::<[u8; 11]>(),
            TypeId::of::<[u8; 12]>(),
        ]
    }

    #[test]
    fn concurrent_first_lookups_agree_on_one_index_per_type() {
        let ids = ids();
        let barrier = std::sync::Barrier::new(8);
        let seen: Vec<Vec<u32>> = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..8)
                .map(|thread| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        barrier.wait();
                        // Each thread registers the types in its own order.
                        let mut indices = vec![0; ids.len()];
                        for step in 0..ids.len() {
                            let which = (step * (thread + 1) + thread) % ids.len();
                            indices[which] = index_of(ids[which]);
                        }
                        for (which, id) in ids.iter().enumerate() {
                            indices[which] = index_of(*id);
                        }
                        indices
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for indices in &seen {
            assert_eq!(indices, &seen[0], "every thread sees the same indices");
        }
        let mut distinct = seen[0].clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            ids.len(),
            "one index per type: {:?}",
            seen[0]
        );
        assert!(distinct.iter().all(|&index| index >= 1));
    }

    #[test]
    fn keys_of_one_type_share_its_value_and_types_keep_their_own() {
        static A1: LocalKey<Numbered<1>> = LocalKey::new();
        static A2: LocalKey<Numbered<1>> = LocalKey::new();
        static B: LocalKey<Numbered<2>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        let call = Anchor::new();
        call.mark(1);
        // SAFETY: marked above.
        let me = at(unsafe { call.holder_mark() }, 1, 0);
        // SAFETY: this thread owns `locals`; each `LocalRef` is dropped
        // before the next lookup of its type.
        unsafe {
            locals.get(&B, 1, 0, me, &stack).unwrap().uses += 10;
            locals.get(&A1, 1, 0, me, &stack).unwrap().uses += 1;
            locals.get(&A2, 1, 0, me, &stack).unwrap().uses += 1;
            assert_eq!(locals.get(&A1, 1, 0, me, &stack).unwrap().uses, 2);
            assert_eq!(locals.get(&B, 1, 0, me, &stack).unwrap().uses, 10);
            assert_eq!(
                locals.get(&A2, 1, 0, me, &stack).unwrap().binds,
                1,
                "bound once"
            );
        }
    }

    // The thread's stack bounds are looked up on Linux only (and not
    // under Miri, which has no `pthread_getattr_np`).
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn a_held_value_is_in_use_until_its_ref_drops_or_its_call_is_gone() {
        static KEY: LocalKey<Numbered<3>> = LocalKey::new();
        static OTHER: LocalKey<Numbered<4>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        // Three calls on this thread's stack: `calls[2]` the outermost,
        // `calls[0]` the deepest (an array's later elements are higher).
        let calls = [Anchor::new(), Anchor::new(), Anchor::new()];
        for (token, call) in (1..).zip(&calls) {
            call.mark(token);
        }
        // SAFETY: each anchor was marked above.
        let [deepest, nested, outer] = calls
            .each_ref()
            .map(|call| at(unsafe { call.holder_mark() }, 1, 0));
        // SAFETY: this thread owns `locals`; the refs of abandoned calls
        // are forgotten (their frames are "gone") before the values are
        // taken again.
        unsafe {
            let held = locals.get(&KEY, 1, 0, outer, &stack).unwrap();
            let message = locals
                .get(&KEY, 2, 0, nested, &stack)
                .err()
                .unwrap()
                .into_message();
            assert!(
                message.contains("already in use by an outer call"),
                "{message}"
            );
            // The holder asking again: a callback with two `#[local]`
            // parameters of one type under two names.
            let again = locals
                .get(&KEY, 1, 0, outer, &stack)
                .err()
                .unwrap()
                .into_message();
            assert!(again.contains("taken twice by one call"), "{again}");
            assert!(
                locals.get(&OTHER, 2, 0, nested, &stack).is_ok(),
                "another type is free"
            );
            drop(held);
            assert!(
                locals.get(&KEY, 2, 0, nested, &stack).is_ok(),
                "free again once dropped"
            );

            // Held by the nested call, which is then abandoned.
            core::mem::forget(locals.get(&KEY, 2, 0, nested, &stack).unwrap());
            assert!(
                locals.get(&KEY, 3, 0, deepest, &stack).is_err(),
                "below the holder with its token in place: it may be running"
            );
            let value = locals
                .get(&KEY, 1, 0, outer, &stack)
                .expect("a call above the holder on the thread's stack: the holder is gone");
            assert_eq!((value.binds, value.releases), (1, 0), "still bound, once");
            drop(value);

            // Held by the nested call again, whose frame is then reused.
            core::mem::forget(locals.get(&KEY, 2, 0, nested, &stack).unwrap());
            calls[1].mark(99);
            assert!(
                locals.get(&KEY, 3, 0, deepest, &stack).is_ok(),
                "its token was overwritten: the holder is gone"
            );
            let other = locals.get(&OTHER, 1, 0, outer, &stack).unwrap();
            assert_eq!(other.binds, 1, "freeing a held value keeps it bound");
        }
    }

    // The thread's stack bounds are looked up on Linux only (and not
    // under Miri, which has no `pthread_getattr_np`).
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn a_hold_below_an_outermost_call_that_is_over_is_stale() {
        static KEY: LocalKey<Numbered<12>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        // `calls[2]` the outermost call, `calls[1]` a call nested in it that
        // holds the value and is abandoned, `calls[0]` a call below both
        // (its token is not overwritten).
        let calls = [Anchor::new(), Anchor::new(), Anchor::new()];
        for (token, call) in (1..).zip(&calls) {
            call.mark(token);
        }
        // SAFETY: each anchor was marked above.
        let [deepest, nested, outer] = calls.each_ref().map(|call| unsafe { call.holder_mark() });
        let outer_address = outer.address();
        // SAFETY: this thread owns `locals`; the forgotten ref stands for
        // the abandoned call.
        unsafe {
            core::mem::forget(
                locals
                    .get(&KEY, 2, 0, at(nested, 1, outer_address), &stack)
                    .unwrap(),
            );
            assert!(
                locals
                    .get(&KEY, 3, 0, at(deepest, 1, outer_address), &stack)
                    .is_err(),
                "under the same outermost call, the holder may be running"
            );
            assert!(
                locals.get(&KEY, 3, 0, at(deepest, 2, 0), &stack).is_ok(),
                "under the next outermost call: the one it ran under is over"
            );
        }
        // Held the same way, but the outermost call ran on another stack:
        // its return alone does not tell (the holder may be suspended).
        let elsewhere = Box::new(Anchor::new());
        let elsewhere = elsewhere.mark(7).address();
        // SAFETY: as above.
        unsafe {
            core::mem::forget(
                locals
                    .get(&KEY, 2, 0, at(nested, 3, elsewhere), &stack)
                    .unwrap(),
            );
            assert!(locals.get(&KEY, 3, 0, at(deepest, 4, 0), &stack).is_err());
        }
    }

    #[cfg(not(target_os = "linux"))]
    #[test]
    fn without_the_stack_bounds_a_hold_is_kept_until_its_ref_drops() {
        static KEY: LocalKey<Numbered<13>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        let calls = [Anchor::new(), Anchor::new()];
        for (token, call) in (1..).zip(&calls) {
            call.mark(token);
        }
        // SAFETY: each anchor was marked above.
        let [nested, outer] = calls
            .each_ref()
            .map(|call| at(unsafe { call.holder_mark() }, 1, 0));
        // SAFETY: this thread owns `locals`; the forgotten ref stands for
        // an abandoned call.
        unsafe {
            core::mem::forget(locals.get(&KEY, 2, 0, nested, &stack).unwrap());
            calls[0].mark(99);
            assert!(
                locals
                    .get(&KEY, 1, 0, at(outer.call, 2, 0), &stack)
                    .is_err(),
                "neither its place nor its token can be trusted without the bounds"
            );
        }
    }

    #[test]
    fn a_hold_on_another_stack_is_kept_until_its_ref_drops_or_all_are_freed() {
        static KEY: LocalKey<Numbered<9>> = LocalKey::new();
        static OTHER: LocalKey<Numbered<10>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        let caller = Anchor::new();
        caller.mark(1);
        // A call suspended on a coroutine stack: off the thread's stack.
        let elsewhere = Box::new(Anchor::new());
        elsewhere.mark(2);
        // SAFETY: both anchors were marked above.
        let (caller, suspended) = unsafe { (caller.holder_mark(), elsewhere.holder_mark()) };
        // Under an outermost call on this stack, which then returns.
        let outer = Anchor::new();
        let outer_address = outer.mark(9).address();
        let (caller, suspended) = (
            at(caller, 2, outer_address),
            at(suspended, 1, outer_address),
        );
        // SAFETY: this thread owns `locals`; the forgotten refs stand for a
        // suspended call and, at `release_all`, for calls that are gone.
        unsafe {
            let held = locals.get(&KEY, 2, 0, suspended, &stack).unwrap();
            elsewhere.mark(3);
            let message = locals
                .get(&KEY, 1, 0, caller, &stack)
                .err()
                .unwrap()
                .into_message();
            assert!(
                message.contains("already in use"),
                "a holder off the thread's stack is never taken for gone: {message}"
            );
            drop(held);
            assert!(
                locals.get(&KEY, 1, 0, caller, &stack).is_ok(),
                "free once its ref drops"
            );
            // `release_all` runs with no call: every hold is stale then.
            core::mem::forget(locals.get(&OTHER, 2, 0, suspended, &stack).unwrap());
            locals.release_all();
            assert!(!locals.has_values(), "the held value was released");
            let other = locals.get(&OTHER, 1, 0, caller, &stack).unwrap();
            assert_eq!((other.binds, other.releases), (2, 1));
        }
    }

    #[test]
    fn a_hold_through_the_state_is_not_found_by_the_fast_path() {
        static KEY: LocalKey<Numbered<11>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        let call = Anchor::new();
        call.mark(1);
        // SAFETY: marked above.
        let me = at(unsafe { call.holder_mark() }, 1, 0);
        // SAFETY: this thread owns `locals`; the ref is dropped at the end.
        unsafe {
            drop(locals.get(&KEY, 1, 0, me, &stack).unwrap());
            assert!(locals.get_ready(&KEY).is_some(), "bound and free");
            assert!(locals.get_ready(&KEY).is_some(), "remembered");
            // A call the runtime may no longer record holds it (suspended
            // on another stack): an idle context's next call must not get
            // it.
            let held = locals.get(&KEY, 2, 0, me, &stack).unwrap();
            assert!(locals.get_ready(&KEY).is_none(), "held, so not ready");
            drop(held);
            assert!(locals.get_ready(&KEY).is_some(), "ready once its ref drops");
        }
    }

    #[test]
    fn a_released_value_is_not_found_ready_although_it_was_the_last_one() {
        static KEY: LocalKey<Numbered<7>> = LocalKey::new();
        static OTHER: LocalKey<Numbered<8>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        let call = Anchor::new();
        call.mark(1);
        // SAFETY: marked above.
        let me = at(unsafe { call.holder_mark() }, 1, 0);
        // SAFETY: this thread owns `locals`, and no call runs on it between
        // the lookups (each `LocalRef` is dropped at once).
        unsafe {
            assert!(locals.get_ready(&KEY).is_none(), "no value yet");
            drop(locals.get(&KEY, 1, 0, me, &stack).unwrap());
            drop(locals.get(&OTHER, 1, 0, me, &stack).unwrap());
            let (entry, value) = locals.get_ready(&KEY).expect("bound and free");
            let index = held_in(entry);
            assert_ne!(index, 0, "an index is assigned");
            assert_eq!((*value).binds, 1);
            // While the outermost call holds it through the entry word, a
            // nested call is refused it, though its state says `READY`.
            let message = locals
                .get(&KEY, 2, index, me, &stack)
                .err()
                .unwrap()
                .into_message();
            assert!(message.contains("already in use"), "{message}");
            assert!(
                locals.get(&OTHER, 2, index, me, &stack).is_ok(),
                "another type is free"
            );
            assert_eq!(locals.get_ready(&KEY).expect("remembered").0, entry);
            locals.release_all();
            assert!(
                locals.get_ready(&KEY).is_none(),
                "released, so not ready, although it was the last one found"
            );
            drop(locals.get(&KEY, 1, 0, me, &stack).unwrap());
            let (_, value) = locals.get_ready(&KEY).expect("bound again");
            assert_eq!(((*value).binds, (*value).releases), (2, 1));
            // Another type's lookup replaces the remembered one.
            drop(locals.get(&OTHER, 1, 0, me, &stack).unwrap());
            let (_, other) = locals.get_ready(&OTHER).expect("bound again");
            assert_eq!(((*other).binds, (*other).releases), (2, 1));
        }
    }

    #[test]
    fn release_all_releases_bound_values_once_and_the_next_use_binds_again() {
        static A: LocalKey<Numbered<5>> = LocalKey::new();
        static B: LocalKey<Numbered<6>> = LocalKey::new();
        let locals = Locals::new();
        let stack = ThreadStack::new();
        let call = Anchor::new();
        call.mark(1);
        // SAFETY: marked above.
        let me = at(unsafe { call.holder_mark() }, 1, 0);
        // SAFETY: this thread owns `locals`; no `LocalRef` is alive across
        // `release_all`.
        unsafe {
            assert!(!locals.has_values());
            drop(locals.get(&A, 1, 0, me, &stack).unwrap());
            assert!(locals.has_values());
            locals.release_all();
            assert!(!locals.has_values(), "nothing is bound after release_all");
            locals.release_all();
            let a = locals.get(&A, 1, 0, me, &stack).unwrap();
            assert_eq!((a.binds, a.releases), (2, 1));
            drop(a);
            // `B` was never used: it has no value to release.
            drop(locals.get(&B, 1, 0, me, &stack).unwrap());
            let b = locals.get(&B, 1, 0, me, &stack).unwrap();
            assert_eq!((b.binds, b.releases), (1, 0));
        }
    }
}
