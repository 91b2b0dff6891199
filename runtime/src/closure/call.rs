//! One call of a closure, from the C function to its body: the
//! `unsafe extern "C"` functions (three per parameter list, `arity!`),
//! [`run`] at the boundary, and the three bodies ([`Invoke`]).

use core::cell::{Cell, UnsafeCell};
use core::ffi::c_void;
use core::ptr::NonNull;

use super::allocation::{Header, Shared, release, retain};
use super::exclusive::Exclusive;
use super::fork::RecordedReference;
use super::hold::{Hold, announce, destroy_now, hold, unhold};
use super::{Accessor, CReturn, CValue, FnBody, FnMutBody, FnOnceBody, Outcome, Signature, sealed};
use crate::boundary::{
    Frame, align_to_fetch_line, bound_node, call, call_from, call_from_at, fast_slot, thread_mark,
};
use crate::diag::abort_with;
use crate::failure::Failure;
use crate::stack::Anchor;

/// How a closure's body is stored and called.
trait Invoke<Args> {
    type Out: Outcome;
    const HOLD: Hold;
    /// Runs the body in the call `frame` serves; `turn` says how an `FnMut`
    /// body's call has its turn (the others ignore it).
    ///
    /// # Safety
    ///
    /// `header` is the closure's whose body `self` is, and the call holds it
    /// by [`HOLD`](Invoke::HOLD) (with [`Entry::Held`], by a turn the caller
    /// took for this call, on this thread, and ends after it).
    unsafe fn invoke(
        &self,
        frame: &Frame,
        header: NonNull<Header>,
        turn: Entry<'_>,
        args: Args,
    ) -> Result<<Self::Out as Outcome>::C, Failure>;
}

type ReturnOf<B, Args> = <<B as Invoke<Args>>::Out as Outcome>::C;

/// How the call of an `FnMut` body has its turn.
#[derive(Clone, Copy)]
enum Entry<'a> {
    /// The body takes it, and sets the flag when the closure was retired
    /// during the turn: the caller drops it once the call no longer uses it.
    Takes(&'a Cell<bool>),
    /// The caller took it for this call ([`run_turn`]).
    Held,
}

/// Runs one call of the closure whose data is `data`, at the boundary.
///
/// # Safety
///
/// `data` is a live closure's, with a `B` body and a `ReturnOf<B, Args>`
/// result; for a once closure, this is its one call.
#[hot_path]
unsafe fn run<B: Invoke<Args>, Args>(data: *mut c_void, args: Args) -> ReturnOf<B, Args> {
    let header = NonNull::new(data.cast::<Header>()).unwrap_or_else(|| null_data());
    // SAFETY: a live `Shared<B, ReturnOf<B, Args>>` (caller obligation),
    // kept alive by what this call holds until `unhold`.
    let shared = unsafe { &*header.cast::<Shared<B, ReturnOf<B, Args>>>().as_ptr() };
    if B::HOLD == Hold::Turn {
        // SAFETY: forwarded caller obligations.
        return unsafe { run_turn::<B, Args>(header, shared, args) };
    }
    if B::HOLD == Hold::Announced {
        // SAFETY: forwarded caller obligations.
        return unsafe { run_announced::<B, Args>(header, shared, args) };
    }
    // SAFETY: forwarded caller obligations.
    unsafe { run_held::<B, Args>(header, args) }
}

/// [`run`] for a `Closure::concurrent` call: its straight line, on the
/// context the one read of the thread's slot found bound, with the
/// closure announced in its hazard word; everything else in [`run_held`].
///
/// # Safety
///
/// As for `run`; `shared` is the closure's of `header`.
#[hot_path]
unsafe fn run_announced<B: Invoke<Args>, Args>(
    header: NonNull<Header>,
    shared: &Shared<B, ReturnOf<B, Args>>,
    args: Args,
) -> ReturnOf<B, Args> {
    align_to_fetch_line();
    let read = fast_slot(&shared.site);
    if let Some(node) = bound_node(read.0) {
        // SAFETY: the context bound to this thread, which `hold` would
        // announce on; the closure is live (caller obligation).
        if let Some(held) = unsafe { announce(node, header) } {
            let on_failure = shared.on_failure;
            let never = Cell::new(false);
            // SAFETY: this closure's header, held by this call.
            let body = |frame: &Frame| unsafe {
                shared
                    .body
                    .invoke(frame, header, Entry::Takes(&never), args)
            };
            // SAFETY: `read` as `fast_slot` read it; the announcement starts no
            // call and ends none.
            let result =
                unsafe { call_from(&shared.site, read, || on_failure, || on_failure, body) };
            // SAFETY: what this call took, after its last use of the closure.
            unsafe { unhold(header, held) };
            return result;
        }
    }
    // SAFETY: forwarded caller obligations.
    unsafe { run_off_line::<B, Args>(header, args) }
}

/// [`run`] for a `Closure::new` call. On its straight line (a bound
/// context the one read of the thread's slot found, the turn free) the turn
/// is taken before the call starts and ended after it returns, so its
/// locked instructions find few stores to wait for (a panic in the body
/// ends in `call_from_at`); the context notes the turn meanwhile, for a
/// `fork` child ([`HeldRefs::note_turn`](crate::sync::HeldRefs::note_turn)).
/// Otherwise [`run_turn_slow`], where the body takes the turn. Both use
/// the anchor made here, so a call abandoned from this trampoline leaves
/// its token where the next call's goes.
///
/// # Safety
///
/// As for `run`; `shared` is the closure's of `header`.
#[hot_path]
unsafe fn run_turn<B: Invoke<Args>, Args>(
    header: NonNull<Header>,
    shared: &Shared<B, ReturnOf<B, Args>>,
    args: Args,
) -> ReturnOf<B, Args> {
    align_to_fetch_line();
    let anchor = Anchor::new();
    let read = fast_slot(&shared.site);
    if let Some(node) = bound_node(read.0) {
        // SAFETY: live (caller obligation).
        let turn = unsafe { &(*header.as_ptr()).turn };
        node.value.held.note_turn();
        if turn.try_begin(thread_mark(node)).is_ok() {
            let on_failure = shared.on_failure;
            // SAFETY: this closure's header; this thread took its turn for the
            // call and ends it below.
            let body = move |frame: &Frame| unsafe {
                shared.body.invoke(frame, header, Entry::Held, args)
            };
            // SAFETY: `read` as `fast_slot` read it (taking the turn starts no
            // call and ends none); `anchor` is in this trampoline's frame.
            let result = unsafe {
                call_from_at(
                    &shared.site,
                    read,
                    &anchor,
                    move || on_failure,
                    move || on_failure,
                    body,
                )
            };
            // SAFETY: taken above by `try_begin` on this thread, for the call
            // that returned.
            let retired = unsafe { turn.end_begun() };
            node.value.held.end_turn();
            if retired {
                // SAFETY: retired during this call's turn, which it ended: nothing
                // holds the closure any more, and this call no longer uses it.
                unsafe { destroy_now(header) };
            }
            return result;
        }
        node.value.held.end_turn();
    }
    // SAFETY: forwarded caller obligations; `anchor` as above.
    unsafe { run_turn_slow::<B, Args>(header, args, &anchor) }
}

/// A `Closure::new` call off [`run_turn`]'s straight line: its body takes
/// the turn ([`Exclusive::with`]), waiting for it or taking back one an
/// abandoned call left, and the call drops the closure after it if it was
/// retired during the turn.
///
/// # Safety
///
/// As for `run`; `anchor` is in the calling trampoline's frame, which
/// passes it to every call it makes.
#[cold]
#[inline(never)]
unsafe fn run_turn_slow<B: Invoke<Args>, Args>(
    header: NonNull<Header>,
    args: Args,
    anchor: &Anchor,
) -> ReturnOf<B, Args> {
    // SAFETY: as in `run`.
    let shared = unsafe { &*header.cast::<Shared<B, ReturnOf<B, Args>>>().as_ptr() };
    let on_failure = shared.on_failure;
    let destroy = Cell::new(false);
    // SAFETY: this closure's header, live until its turn ends (caller
    // obligation).
    let body = |frame: &Frame| unsafe {
        shared
            .body
            .invoke(frame, header, Entry::Takes(&destroy), args)
    };
    let read = fast_slot(&shared.site);
    // SAFETY: `read` just read; `anchor` as the caller obligation says.
    let result = unsafe {
        call_from_at(
            &shared.site,
            read,
            anchor,
            || on_failure,
            || on_failure,
            body,
        )
    };
    if destroy.get() {
        // SAFETY: retired during this call's turn, which it ended: nothing
        // holds the closure any more, and this call no longer uses it.
        unsafe { destroy_now(header) };
    }
    result
}

/// [`run_held`] out of line, off a straight line.
///
/// # Safety
///
/// As for `run`.
#[cold]
#[inline(never)]
unsafe fn run_off_line<B: Invoke<Args>, Args>(
    header: NonNull<Header>,
    args: Args,
) -> ReturnOf<B, Args> {
    // SAFETY: forwarded caller obligations.
    unsafe { run_held::<B, Args>(header, args) }
}

/// [`run`] by [`hold`]: every call of a once closure, and a
/// `Closure::concurrent` call off its straight line.
///
/// # Safety
///
/// As for `run`.
#[hot_path]
unsafe fn run_held<B: Invoke<Args>, Args>(
    header: NonNull<Header>,
    args: Args,
) -> ReturnOf<B, Args> {
    // SAFETY: as in `run`.
    let shared = unsafe { &*header.cast::<Shared<B, ReturnOf<B, Args>>>().as_ptr() };
    // SAFETY: live (caller obligation), held by `B::HOLD`, as allocated.
    let Some(held) = (unsafe { hold(header, &shared.site, B::HOLD) }) else {
        // SAFETY: forwarded caller obligations.
        return unsafe { run_recorded::<B, Args>(header, args) };
    };
    let on_failure = shared.on_failure;
    let never = Cell::new(false);
    let result = call(
        &shared.site,
        || on_failure,
        || on_failure,
        // SAFETY: this closure's header, held by this call.
        |frame| unsafe {
            shared
                .body
                .invoke(frame, header, Entry::Takes(&never), args)
        },
    );
    // SAFETY: what this call took, after its last use of the closure.
    unsafe { unhold(header, held) };
    result
}

/// [`run`] for a `Closure::concurrent` call that cannot announce the
/// closure (see [`hold`]): it counts a reference and records it in its
/// context, for a `fork` child to give up (`give_up_left_behind`).
///
/// # Safety
///
/// As for `run`.
#[cold]
#[inline(never)]
unsafe fn run_recorded<B: Invoke<Args>, Args>(
    header: NonNull<Header>,
    args: Args,
) -> ReturnOf<B, Args> {
    // SAFETY: as in `run`, kept alive by this call's reference until it
    // releases it.
    let shared = unsafe { &*header.cast::<Shared<B, ReturnOf<B, Args>>>().as_ptr() };
    // SAFETY: live (caller obligation).
    unsafe { retain(header) };
    let on_failure = shared.on_failure;
    let result = call(
        &shared.site,
        || on_failure,
        || on_failure,
        |frame| {
            // Erased as the body returns or unwinds, before the reference
            // is given up; left by a call abandoned inside the body.
            let _recorded = RecordedReference::new(header);
            // SAFETY: `header` is this closure's, and this call holds a
            // reference to it.
            unsafe {
                shared
                    .body
                    .invoke(frame, header, Entry::Takes(&Cell::new(false)), args)
            }
        },
    );
    // SAFETY: the reference taken above, given up after the call's last
    // use of the closure.
    unsafe { release(header) };
    result
}

/// A copy of the accessor `G` a closure was made with, which finds its data
/// among the call's arguments; a panic in it aborts, as no closure is known
/// to take the fallback from.
#[hot_path]
fn access<S: Signature, G: Accessor<S>>(args: &S::Args) -> *mut c_void {
    let () = CapturesNothing::<G>::CHECK;
    // SAFETY: `G` is zero-sized and `Copy`, and the function calling this
    // was made from a `G` (`FnMutBody::accessed`): this is a copy of it.
    let accessor = unsafe { core::mem::zeroed::<G>() };
    // Unwind safety is moot: a panic aborts.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| accessor.data(args)))
        .unwrap_or_else(|_| accessor_panicked::<G>())
}

/// The compile-time check that an accessor is zero-sized, made where a
/// `Closure::with_accessor` is, and before conjuring one.
pub(super) struct CapturesNothing<G>(G);

impl<G> CapturesNothing<G> {
    pub(super) const CHECK: () = assert!(
        size_of::<G>() == 0,
        "the accessor of `Closure::with_accessor` must capture nothing"
    );
}

#[cold]
#[inline(never)]
fn accessor_panicked<G>() -> ! {
    abort_with(&format!(
        "callgate: the closure data accessor `{}` panicked; aborting",
        core::any::type_name::<G>()
    ))
}

#[cold]
#[inline(never)]
fn null_data() -> ! {
    abort_with("callgate: a closure was called with a NULL data pointer; aborting")
}

/// The body of a `Closure::concurrent` closure: an `Fn + Sync`.
pub(super) struct Concurrent<F> {
    pub(super) body: F,
}

/// The body of a `OnceClosure`, taken by its one call.
pub(super) struct Once<F> {
    pub(super) body: UnsafeCell<Option<F>>,
}

impl<F> Once<F> {
    #[hot_path]
    fn take(&self) -> Result<F, Failure> {
        // SAFETY: a once closure has one call (`hold` aborts a second), so
        // this is the only access to the cell until the closure is dropped.
        let body = unsafe { (*self.body.get()).take() };
        body.ok_or_else(|| Failure::new("the once closure was already called"))
    }
}

/// Generates, for one parameter list: the `Signature` of `fn(..) -> R`,
/// the data-first, data-last and accessed C functions, the `Invoke` impls
/// of the three bodies, the `Fn*Body` impls that pick them, and the
/// `Accessor` impl.
macro_rules! arity {
    ($first:ident, $last:ident, $accessed:ident; $($arg:ident: $ty:ident),*) => {
        impl<R: CReturn, $($ty: CValue),*> Signature for fn($($ty),*) -> R {
            type Output = R;
            type DataFirst = unsafe extern "C" fn(*mut c_void, $($ty),*) -> R;
            type DataLast = unsafe extern "C" fn($($ty,)* *mut c_void) -> R;
            type Accessed = unsafe extern "C" fn($($ty),*) -> R;
            type Args = ($($ty,)*);
        }

        impl<G, R: CReturn, $($ty: CValue),*> sealed::Accessor<fn($($ty),*) -> R> for G
        where
            G: Fn($($ty),*) -> *mut c_void + Copy + Send + Sync + 'static,
        {
            #[hot_path]
            fn data(&self, &($($arg,)*): &($($ty,)*)) -> *mut c_void {
                self($($arg),*)
            }
        }

        /// # Safety
        ///
        /// As `run`, for the data `G` finds.
        unsafe extern "C" fn $accessed<B, G, $($ty: CValue),*>(
            $($arg: $ty),*
        ) -> ReturnOf<B, ($($ty,)*)>
        where
            B: Invoke<($($ty,)*)>,
            G: Accessor<fn($($ty),*) -> ReturnOf<B, ($($ty,)*)>>,
        {
            let args = ($($arg,)*);
            let data = access::<fn($($ty),*) -> ReturnOf<B, ($($ty,)*)>, G>(&args);
            // SAFETY: forwarded caller obligation.
            unsafe { run::<B, ($($ty,)*)>(data, args) }
        }

        /// # Safety
        ///
        /// As `run`.
        unsafe extern "C" fn $first<B: Invoke<($($ty,)*)>, $($ty),*>(
            data: *mut c_void,
            $($arg: $ty),*
        ) -> ReturnOf<B, ($($ty,)*)> {
            // SAFETY: forwarded caller obligation.
            unsafe { run::<B, ($($ty,)*)>(data, ($($arg,)*)) }
        }

        /// # Safety
        ///
        /// As `run`.
        unsafe extern "C" fn $last<B: Invoke<($($ty,)*)>, $($ty),*>(
            $($arg: $ty,)*
            data: *mut c_void
        ) -> ReturnOf<B, ($($ty,)*)> {
            // SAFETY: forwarded caller obligation.
            unsafe { run::<B, ($($ty,)*)>(data, ($($arg,)*)) }
        }

        impl<F, O: Outcome, $($ty),*> Invoke<($($ty,)*)> for Exclusive<F>
        where
            F: FnMut($($ty),*) -> O,
        {
            type Out = O;
            const HOLD: Hold = Hold::Turn;
            #[hot_path]
            unsafe fn invoke(
                &self,
                frame: &Frame,
                header: NonNull<Header>,
                turn: Entry<'_>,
                ($($arg,)*): ($($ty,)*),
            ) -> Result<O::C, Failure> {
                let run = |body: &mut F| body($($arg),*);
                match turn {
                    // SAFETY: forwarded caller obligation: live until the call's
                    // turn ends.
                    Entry::Takes(destroy) => unsafe { self.with(frame, header, destroy, run) }?,
                    // SAFETY: forwarded caller obligation.
                    Entry::Held => unsafe { self.in_turn(frame, run) },
                }
                .into_c()
            }
        }

        impl<F, O: Outcome, $($ty),*> Invoke<($($ty,)*)> for Concurrent<F>
        where
            F: Fn($($ty),*) -> O,
        {
            type Out = O;
            const HOLD: Hold = Hold::Announced;
            #[hot_path]
            unsafe fn invoke(
                &self,
                _: &Frame,
                _: NonNull<Header>,
                _: Entry<'_>,
                ($($arg,)*): ($($ty,)*),
            ) -> Result<O::C, Failure> {
                (self.body)($($arg),*).into_c()
            }
        }

        impl<F, O: Outcome, $($ty),*> Invoke<($($ty,)*)> for Once<F>
        where
            F: FnOnce($($ty),*) -> O,
        {
            type Out = O;
            const HOLD: Hold = Hold::Owner;
            #[hot_path]
            unsafe fn invoke(
                &self,
                _: &Frame,
                _: NonNull<Header>,
                _: Entry<'_>,
                ($($arg,)*): ($($ty,)*),
            ) -> Result<O::C, Failure> {
                (self.take()?)($($arg),*).into_c()
            }
        }

        impl<F, O: Outcome, $($ty: CValue),*> sealed::Body<fn($($ty),*) -> O::C, ($($ty,)* O,)> for F
        where
            F: FnOnce($($ty),*) -> O + Send + 'static,
        {
        }

        impl<F, O: Outcome, $($ty: CValue),*> FnMutBody<fn($($ty),*) -> O::C, ($($ty,)* O,)> for F
        where
            F: FnMut($($ty),*) -> O + Send + 'static,
        {
            fn functions() -> (
                unsafe extern "C" fn(*mut c_void, $($ty),*) -> O::C,
                unsafe extern "C" fn($($ty,)* *mut c_void) -> O::C,
            ) {
                ($first::<Exclusive<F>, $($ty),*>, $last::<Exclusive<F>, $($ty),*>)
            }

            fn accessed<G: Accessor<fn($($ty),*) -> O::C>>(
                _: G,
            ) -> unsafe extern "C" fn($($ty),*) -> O::C {
                $accessed::<Exclusive<F>, G, $($ty),*>
            }
        }

        impl<F, O: Outcome, $($ty: CValue),*> FnBody<fn($($ty),*) -> O::C, ($($ty,)* O,)> for F
        where
            F: Fn($($ty),*) -> O + Send + Sync + 'static,
        {
            fn functions() -> (
                unsafe extern "C" fn(*mut c_void, $($ty),*) -> O::C,
                unsafe extern "C" fn($($ty,)* *mut c_void) -> O::C,
            ) {
                ($first::<Concurrent<F>, $($ty),*>, $last::<Concurrent<F>, $($ty),*>)
            }
        }

        impl<F, O: Outcome, $($ty: CValue),*> FnOnceBody<fn($($ty),*) -> O::C, ($($ty,)* O,)> for F
        where
            F: FnOnce($($ty),*) -> O + Send + 'static,
        {
            fn functions() -> (
                unsafe extern "C" fn(*mut c_void, $($ty),*) -> O::C,
                unsafe extern "C" fn($($ty,)* *mut c_void) -> O::C,
            ) {
                ($first::<Once<F>, $($ty),*>, $last::<Once<F>, $($ty),*>)
            }
        }
    };
}

arity!(data_first_0, data_last_0, accessed_0;);
arity!(data_first_1, data_last_1, accessed_1; a1: A1);
arity!(data_first_2, data_last_2, accessed_2; a1: A1, a2: A2);
arity!(data_first_3, data_last_3, accessed_3; a1: A1, a2: A2, a3: A3);
arity!(data_first_4, data_last_4, accessed_4; a1: A1, a2: A2, a3: A3, a4: A4);
arity!(data_first_5, data_last_5, accessed_5; a1: A1, a2: A2, a3: A3, a4: A4, a5: A5);
arity!(data_first_6, data_last_6, accessed_6; a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6);
