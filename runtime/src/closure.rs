//! Rust closures as C callbacks: a C function pointer, the `void *` C
//! passes back to it, and the function that frees it — the shape of every
//! `register(callback, data)` and `register(callback, data, free)` C API.
//!
//! ```
//! use callgate::Closure;
//! use std::ffi::{c_int, c_void};
//!
//! // What a C library would do with it: `int visit(int (*cb)(void *, int), void *data)`.
//! unsafe fn visit(cb: unsafe extern "C" fn(*mut c_void, c_int) -> c_int, data: *mut c_void) -> c_int {
//!     // SAFETY: `cb` and `data` belong together (caller obligation).
//!     (1..=4).map(|value| unsafe { cb(data, value) }).sum()
//! }
//!
//! let mut seen = Vec::new();
//! let square = Closure::new(-1, move |value: c_int| -> Result<c_int, String> {
//!     seen.push(value);
//!     value.checked_mul(value).ok_or_else(|| format!("{value}² overflows"))
//! });
//! // SAFETY: the closure outlives the call.
//! let total = unsafe { visit(square.data_first(), square.data()) };
//! assert_eq!(total, 1 + 4 + 9 + 16);
//! ```
//!
//! Each call goes through the same boundary as a `#[c_callback]`: the init
//! gate, the thread's bound context, panics and `Err`s turned into the
//! declared fallback value with a last error, `stats()`. The closure is
//! dropped when its owner (the [`Closure`] handle, or C after
//! [`Closure::into_raw_parts`]) lets go and the last call running in it on
//! any thread has returned. The owner holds a reference; how a call holds
//! the closure depends on the kind:
//!
//! * a `Closure::new` call takes a reference of its own, a count shared by
//!   every thread (its calls take turns anyway);
//! * a `Closure::concurrent` call announces the closure in its thread's
//!   hazard word instead (`sync::Hazard`, in the thread's context): a
//!   store before the body and a swap after it, on a line no other thread
//!   writes, so calls from many threads at once do not contend for one
//!   counter (two threads made a third of one thread's calls per second
//!   through the shared count). When the last reference goes, the
//!   closure's retirement reads every context's word and leaves the drop
//!   to the last call it finds announcing it. A call that finds its
//!   thread's word taken (by a call it is nested in, or an abandoned one),
//!   or runs on a thread attached per call, takes a reference, which it
//!   records in its context while it runs (`run_recorded`);
//! * the call of a once closure uses the owner's reference.
//!
//! A call abandoned by a `longjmp` out of the body keeps its hold: an
//! announcement until its thread exits (the thread's later calls take
//! references meanwhile); a `Closure::new` call's reference until a later
//! call of the closure on its thread finds it certainly gone and takes the
//! turn back (see `Exclusive::with`), or, once its thread gave up its
//! context (it exited, or a per-call release handed the context on), the
//! next call of the thread that gets it; any other reference for good (the
//! closure leaks).
//!
//! In a `fork` child, the calls of the threads the child lacks never
//! return. It ends their announcements (`end_hold`) and gives up the
//! references their contexts recorded (`give_up_left_behind`): those of
//! `Closure::concurrent` calls, and of `Closure::new` calls waiting for a
//! turn; the reference of a call that holds a turn is given up by the
//! child's first call of the closure, which takes the turn over.
//!
//! Misuse C can make of a closure it owns is caught where the memory
//! allows: the header records how the owner's reference went (C's `free`,
//! or a once closure's call), so a second `free`, a once closure's second
//! call, or its call and a `free`, abort with a message naming the
//! closure. While the closure is alive (a call still holds it) the header
//! is there to read; after the drop, `tombstones` keeps the allocation
//! of the last closures dropped, their bodies dropped, so that the check
//! reads a live allocation rather than freed memory. The call paths of
//! `Closure::new` and `Closure::concurrent` check nothing.
//!
//! # Atomic orderings
//!
//! The reference count follows `Arc`: a call takes its reference with a
//! Relaxed increment (it can only start while an owner's reference keeps
//! the allocation alive, and C's hand-over of the pointer to the calling
//! thread orders the construction before it); every release is a Release
//! decrement, and the one that reaches zero issues an Acquire fence before
//! retiring the closure, so every counted call's use of the closure
//! happens before its drop. The announced calls are ordered before it by
//! the hazard words' own orderings (see `sync::Hazard`). The `owner` word
//! is Relaxed: it orders nothing, and of two read-modify-writes of it one
//! reads the other's value (see `give_up_owner`).

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::fmt::{self, Display};
use core::mem::{MaybeUninit, needs_drop, size_of};
use core::ptr::NonNull;
use core::sync::atomic::fence;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::boundary::{Frame, Policy, Site, bound_context, call, marked_call_is_gone};
use crate::context::{CONTEXTS, ContextNode};
use crate::diag::{abort_with, report};
use crate::failure::{Failure, payload_message};
use crate::gate::GatePolicy;
use crate::settings::AttachMode;
use crate::stack::Mark;
use crate::sync::{AtomicU32, AtomicUsize, Hazard, MARKED, Ordering, OuterWait, Retirement, Turn};
use crate::{thread, valgrind};

#[cfg(test)]
mod tests;
mod tombstones;

// Only the ELF unload hook (Linux, Android) frees the tombstones.
#[cfg_attr(
    not(any(target_os = "linux", target_os = "android")),
    allow(unused_imports)
)]
pub(crate) use tombstones::free_all as free_tombstones;

/// What the parameters and the result of a [`Closure`] may be: the
/// crate's [`CValue`](trait@crate::CValue), also reachable here.
pub use crate::value::CValue;

/// What a closure's C function returns: `()` (C's `void`) or a [`CValue`].
pub trait CReturn: Copy {}

impl CReturn for () {}

impl<T: CValue> CReturn for T {}

/// What a closure body may return: a [`CReturn`] value, passed to C as it
/// is, or a `Result` of one, whose `Err` C sees as the closure's fallback
/// value with the error's text as the last error.
pub trait Outcome {
    /// The value C receives.
    type C: CReturn;
    /// The value for C, or the failure to report.
    #[doc(hidden)]
    fn into_c(self) -> Result<Self::C, Failure>;
}

impl<T: CReturn> Outcome for T {
    type C = T;
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn into_c(self) -> Result<T, Failure> {
        Ok(self)
    }
}

impl<T: CReturn, E: Display> Outcome for Result<T, E> {
    type C = T;
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn into_c(self) -> Result<T, Failure> {
        self.map_err(|error| Failure::from_display(&error))
    }
}

/// The C signature of a closure, written as a Rust `fn` type of its
/// parameters and C result: `Closure<fn(c_int, *const c_char) -> c_int>`.
/// The C function takes the `void *` data first or last besides these.
pub trait Signature {
    /// The C result.
    type Output: CReturn;
    /// `unsafe extern "C" fn(*mut c_void, A, B, …) -> Output`.
    type DataFirst: Copy;
    /// `unsafe extern "C" fn(A, B, …, *mut c_void) -> Output`.
    type DataLast: Copy;
}

mod sealed {
    /// What the closure traits extend, implemented for closures (and other
    /// `FnOnce` values) of C values only: the `unsafe extern "C"`
    /// functions a [`Closure`](super::Closure) holds read the data as the
    /// closure type that made them, so no other implementation may name
    /// them. Unreachable outside this module, so the traits are sealed.
    pub trait Body<S, M> {}
}

/// A closure [`Closure::new`] takes: `FnMut(A, B, …) -> O + Send + 'static`
/// with [`CValue`] parameters and an [`Outcome`]. `M` only tells the
/// parameter lists apart.
#[diagnostic::on_unimplemented(
    message = "this closure cannot be called from C as an `FnMut` with C values",
    label = "not a C-callable closure",
    note = "a closure C can call takes annotated parameters that are C values (integers, \
            floats, `bool`, raw pointers, `callgate::CValue` types), returns `()`, a C \
            value or a `Result` of one, and is `Send + 'static`; references and strings arrive \
            as raw pointers"
)]
pub trait FnMutBody<S: Signature, M>: sealed::Body<S, M> + Send + 'static {
    /// The C functions of this closure type.
    #[doc(hidden)]
    fn functions() -> (S::DataFirst, S::DataLast);
}

/// A closure [`Closure::concurrent`] takes: `Fn(A, B, …) -> O + Send + Sync
/// + 'static`.
#[diagnostic::on_unimplemented(
    message = "this closure cannot be called from C as an `Fn + Sync` with C values",
    label = "not a C-callable closure",
    note = "a closure C can call takes annotated parameters that are C values (integers, \
            floats, `bool`, raw pointers, `callgate::CValue` types), returns `()`, a C \
            value or a `Result` of one, and is `Send + 'static`; references and strings arrive \
            as raw pointers"
)]
pub trait FnBody<S: Signature, M>: sealed::Body<S, M> + Send + Sync + 'static {
    /// The C functions of this closure type.
    #[doc(hidden)]
    fn functions() -> (S::DataFirst, S::DataLast);
}

/// A closure [`OnceClosure::new`] takes: `FnOnce(A, B, …) -> O + Send +
/// 'static`.
#[diagnostic::on_unimplemented(
    message = "this closure cannot be called from C as an `FnOnce` with C values",
    label = "not a C-callable closure",
    note = "a closure C can call takes annotated parameters that are C values (integers, \
            floats, `bool`, raw pointers, `callgate::CValue` types), returns `()`, a C \
            value or a `Result` of one, and is `Send + 'static`; references and strings arrive \
            as raw pointers"
)]
pub trait FnOnceBody<S: Signature, M>: sealed::Body<S, M> + Send + 'static {
    /// The C functions of this closure type.
    #[doc(hidden)]
    fn functions() -> (S::DataFirst, S::DataLast);
}

/// A Rust closure C can call: a C function pointer and the `void *` to
/// pass it.
///
/// `S` is the C signature as a Rust `fn` type without the data pointer:
/// a `Closure<fn(c_int) -> c_int>` gives the C function
/// `int (*)(void *data, int)` ([`data_first`](Closure::data_first)) or
/// `int (*)(int, void *data)` ([`data_last`](Closure::data_last)), and
/// [`data`](Closure::data) is the pointer to pass as `data`.
///
/// Parameters and results are plain C values ([`CValue`]: integers,
/// floats, `bool`, raw pointers, `#[derive(CValue)]` structs); a
/// fieldless enum arrives as its integer, to convert in the body;
/// annotate the closure's parameter types. The body may return a
/// `Result<T, E: Display>`: C gets `T`, or the fallback with `E`'s text as
/// the last error. References, strings and slices arrive as raw pointers:
/// for the checked mapping of `#[c_callback]`, write a `#[c_callback(local)]`
/// fn with a `#[user_data]` parameter instead.
///
/// # Calls
///
/// Every call passes the init gate, runs on the thread's bound context,
/// catches a panic or an `Err` and returns the `on_failure` value given at
/// construction, with a last error naming the closure's type. Calls of a
/// `Closure::new` closure (an `FnMut`) take turns: one on another thread
/// waits, and one that re-enters the closure from inside itself (through C)
/// fails with the fallback instead of aliasing it, as does one made while
/// a call of the same thread is suspended inside the closure on another
/// stack (a coroutine switched away from inside the body). A
/// [`Closure::concurrent`] closure (an `Fn + Sync`) runs calls in parallel.
///
/// # Ownership
///
/// - **Rust keeps it** (`register(cb, data)` APIs, and calls that return
///   before the closure is dropped: `qsort_r`, `sqlite3_exec`): pass
///   [`data_first`](Closure::data_first) or [`data_last`](Closure::data_last)
///   and [`data`](Closure::data), and drop the `Closure` once C has stopped
///   starting calls (unregistered it). Calls still running on other threads
///   finish first; the last one drops the closure.
/// - **C keeps it** (`register(cb, data, free)` APIs: glib's
///   `GDestroyNotify`, SQLite's `xDestroy`): [`into_raw_parts`](Closure::into_raw_parts)
///   gives the function, the data and `free`, and C calls `free(data)` once
///   when it is done. If registration fails and the API says it did not
///   call `free`, call it yourself, once.
///
/// Starting a call after the owner let go (a dropped `Closure`, a `free`d
/// pointer) is a use after free, as with any C callback data; a call with
/// a NULL data pointer aborts the process with a message. So does a second
/// `free`, while the closure's memory is still there: the guide's Known
/// limits page says how long that is.
///
/// Closure calls use the defaults of `#[c_callback]`: `attach = bound`,
/// `gate = wait`, and the fallback on both panics and errors (the
/// `CALLGATE` environment variable applies as usual).
///
/// ```
/// use callgate::Closure;
/// use std::ffi::{c_int, c_void};
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicI32, Ordering};
///
/// // A C API that keeps the callback: `void on_event(void (*cb)(int, void *), void *data,
/// // void (*free)(void *))`, here storing it until it "unregisters" it.
/// struct Registration {
///     cb: unsafe extern "C" fn(c_int, *mut c_void),
///     data: *mut c_void,
///     free: unsafe extern "C" fn(*mut c_void),
/// }
///
/// let total = Arc::new(AtomicI32::new(0));
/// let seen = Arc::clone(&total);
/// let parts = Closure::new((), move |event: c_int| {
///     seen.fetch_add(event, Ordering::Relaxed);
/// })
/// .into_raw_parts();
/// let registration = Registration { cb: parts.data_last, data: parts.data, free: parts.free };
///
/// // SAFETY: the three belong together; C calls `free` once, after its last call.
/// unsafe {
///     (registration.cb)(2, registration.data);
///     (registration.cb)(40, registration.data);
///     (registration.free)(registration.data);
/// }
/// assert_eq!(total.load(Ordering::Relaxed), 42);
/// assert_eq!(Arc::strong_count(&total), 1, "the closure was dropped");
/// ```
pub struct Closure<S: Signature> {
    header: NonNull<Header>,
    data_first: S::DataFirst,
    data_last: S::DataLast,
}

// SAFETY: the handle owns one reference to the closure, whose body is
// `Send` (every constructor requires it), so it may be dropped on any
// thread; through `&Closure` nothing but its pointers can be reached.
unsafe impl<S: Signature> Send for Closure<S> {}
// SAFETY: as above.
unsafe impl<S: Signature> Sync for Closure<S> {}

/// A closure's three C-side parts, from [`Closure::into_raw_parts`] or
/// [`OnceClosure::into_raw_parts`].
pub struct RawClosure<S: Signature> {
    /// The `void *` to register with the function.
    pub data: *mut c_void,
    /// The function taking `data` as its first parameter.
    pub data_first: S::DataFirst,
    /// The function taking `data` as its last parameter.
    pub data_last: S::DataLast,
    /// `void free(void *data)`: releases C's reference; the closure is
    /// dropped once no call is running. NULL is a no-op. A second `free`,
    /// or one after a once closure's call, aborts with a message where it
    /// can be detected (the guide's Known limits).
    pub free: unsafe extern "C" fn(*mut c_void),
}

impl<S: Signature> fmt::Debug for RawClosure<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawClosure")
            .field("data", &self.data)
            .finish_non_exhaustive()
    }
}

impl<S: Signature> Closure<S> {
    /// Wraps an `FnMut` whose calls take turns; C receives `on_failure`
    /// when a call panics or returns `Err` (or is turned away at the gate,
    /// or re-enters the closure).
    pub fn new<F: FnMutBody<S, M>, M>(on_failure: S::Output, body: F) -> Closure<S> {
        let (data_first, data_last) = F::functions();
        Closure {
            header: allocate::<Exclusive<F>, S::Output>(
                core::any::type_name::<F>(),
                on_failure,
                Exclusive::new(body),
                Hold::Counted,
            ),
            data_first,
            data_last,
        }
    }

    /// Wraps an `Fn + Sync` whose calls may run in parallel, for C that
    /// calls from several threads at once (a thread pool's work function).
    pub fn concurrent<F: FnBody<S, M>, M>(on_failure: S::Output, body: F) -> Closure<S> {
        let (data_first, data_last) = F::functions();
        Closure {
            header: allocate::<Concurrent<F>, S::Output>(
                core::any::type_name::<F>(),
                on_failure,
                Concurrent { body },
                Hold::Announced,
            ),
            data_first,
            data_last,
        }
    }

    /// The `void *` to pass with the function; valid while this `Closure`
    /// lives.
    pub fn data(&self) -> *mut c_void {
        self.header.as_ptr().cast()
    }

    /// The C function taking the data pointer first:
    /// `R (*)(void *data, A, B, …)`.
    pub fn data_first(&self) -> S::DataFirst {
        self.data_first
    }

    /// The C function taking the data pointer last:
    /// `R (*)(A, B, …, void *data)`.
    pub fn data_last(&self) -> S::DataLast {
        self.data_last
    }

    /// Hands the closure to C: it now owns it, and calls `free(data)` once
    /// when it will make no more calls.
    #[must_use = "the closure leaks unless C calls `free` with its data"]
    pub fn into_raw_parts(self) -> RawClosure<S> {
        let parts = RawClosure {
            data: self.data(),
            data_first: self.data_first,
            data_last: self.data_last,
            free: free_closure,
        };
        core::mem::forget(self);
        parts
    }
}

impl<S: Signature> Drop for Closure<S> {
    fn drop(&mut self) {
        // SAFETY: the handle owns one reference and gives it up here.
        unsafe { release(self.header) };
    }
}

impl<S: Signature> fmt::Debug for Closure<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Closure")
            .field("data", &self.data())
            .finish_non_exhaustive()
    }
}

/// A Rust `FnOnce` C calls exactly once, after which it frees itself:
/// `pthread_create`'s start routine, glib's `g_thread_new`, a one-shot
/// completion callback.
///
/// [`into_raw_parts`](OnceClosure::into_raw_parts) hands it to C; its one
/// call runs the body and frees everything. If C will never call it (the
/// thread could not be created, the request was cancelled), call
/// `free(data)` instead, once. Dropping an `OnceClosure` that was not handed
/// over drops the body uncalled. A second call, a `free` after the call or
/// a call after the `free` aborts the process with a message naming the
/// closure, while its memory is still there (the guide's Known limits).
///
/// ```
/// use callgate::OnceClosure;
/// use std::ffi::{c_int, c_void};
///
/// unsafe extern "C" {
///     // As bindgen declares it (the `libc` crate's takes a safe fn pointer).
///     fn pthread_create(
///         thread: *mut libc::pthread_t,
///         attr: *const libc::pthread_attr_t,
///         start: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
///         arg: *mut c_void,
///     ) -> c_int;
/// }
///
/// let name = String::from("worker");
/// let start = OnceClosure::new(std::ptr::null_mut(), move || -> *mut c_void {
///     println!("{name} started");
///     std::ptr::null_mut()
/// })
/// .into_raw_parts();
/// let mut thread: libc::pthread_t = 0;
/// // SAFETY: the start routine and its argument belong together.
/// let rc = unsafe { pthread_create(&mut thread, std::ptr::null(), start.data_first, start.data) };
/// if rc != 0 {
///     // The routine will never run: release it ourselves.
///     // SAFETY: not called and not freed before.
///     unsafe { (start.free)(start.data) };
/// } else {
///     // SAFETY: a thread we created and have not joined.
///     unsafe { libc::pthread_join(thread, std::ptr::null_mut()) };
/// }
/// ```
pub struct OnceClosure<S: Signature> {
    header: NonNull<Header>,
    data_first: S::DataFirst,
    data_last: S::DataLast,
}

// SAFETY: as for `Closure`: the body is `Send`, and the handle only owns a
// reference.
unsafe impl<S: Signature> Send for OnceClosure<S> {}
// SAFETY: as above.
unsafe impl<S: Signature> Sync for OnceClosure<S> {}

impl<S: Signature> OnceClosure<S> {
    /// Wraps an `FnOnce`; C receives `on_failure` if the call panics or
    /// returns `Err` (or is turned away at the gate).
    pub fn new<F: FnOnceBody<S, M>, M>(on_failure: S::Output, body: F) -> OnceClosure<S> {
        let (data_first, data_last) = F::functions();
        OnceClosure {
            header: allocate::<Once<F>, S::Output>(
                core::any::type_name::<F>(),
                on_failure,
                Once {
                    body: UnsafeCell::new(Some(body)),
                },
                Hold::Owner,
            ),
            data_first,
            data_last,
        }
    }

    /// Hands the closure to C, which calls `data_first` or `data_last` with
    /// `data` exactly once — that call frees it — or, if it never will,
    /// `free(data)` once instead.
    #[must_use = "the closure leaks unless C calls it or `free`s it"]
    pub fn into_raw_parts(self) -> RawClosure<S> {
        let parts = RawClosure {
            data: self.header.as_ptr().cast(),
            data_first: self.data_first,
            data_last: self.data_last,
            free: free_closure,
        };
        core::mem::forget(self);
        parts
    }
}

impl<S: Signature> Drop for OnceClosure<S> {
    fn drop(&mut self) {
        // SAFETY: the handle owns the only reference and gives it up here.
        unsafe { release(self.header) };
    }
}

impl<S: Signature> fmt::Debug for OnceClosure<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnceClosure").finish_non_exhaustive()
    }
}

/// The start of every closure allocation, which the data pointer points
/// to.
#[repr(C)]
struct Header {
    /// One for the owner, one per call in flight that counts itself (every
    /// call but the announced ones: see [`Hold`]).
    refs: AtomicUsize,
    /// What the release of the last reference runs: [`destroy`] where no
    /// call announces the closure, else [`retire`], which waits for the
    /// calls that do; once dropped, [`released_after_drop`].
    last_release: unsafe fn(NonNull<Header>),
    /// Drops the closure, a `Shared<B, R>`: [`destroy`].
    destroy: unsafe fn(NonNull<Header>),
    /// Frees the allocation once the closure was dropped:
    /// [`free_allocation`], for [`tombstones`].
    free: unsafe fn(NonNull<Header>),
    /// [`MARKED`] under valgrind, else 0: what an announcement carries, so
    /// that its withdrawal tells helgrind it happens before the drop.
    marked: usize,
    /// The calls that announced the closure and that its drop waits for,
    /// once the last reference is released.
    retirement: Retirement,
    /// How C gave up the owner's reference, if it did: [`OWNED`],
    /// [`FREED`] or [`CALLED`] (see [`give_up_owner`]).
    owner: AtomicU32,
}

/// `Header::owner` while the owner's reference is held (by a [`Closure`]
/// or [`OnceClosure`] handle, or by C after `into_raw_parts`).
const OWNED: u32 = 0;
/// `Header::owner` once C's `free` gave up the owner's reference.
const FREED: u32 = 1;
/// `Header::owner` once a once closure's call took the owner's reference.
const CALLED: u32 = 2;

#[repr(C)]
struct Shared<B, R> {
    header: Header,
    site: Site,
    on_failure: R,
    body: B,
}

fn allocate<B, R>(name: &'static str, on_failure: R, body: B, hold: Hold) -> NonNull<Header> {
    let shared = Box::new(Shared {
        header: Header {
            refs: AtomicUsize::new(1),
            last_release: if hold == Hold::Announced {
                retire
            } else {
                destroy::<B, R>
            },
            destroy: destroy::<B, R>,
            free: free_allocation::<B, R>,
            marked: if valgrind::running() { MARKED } else { 0 },
            retirement: Retirement::new(),
            owner: AtomicU32::new(OWNED),
        },
        site: Site {
            name,
            attach: AttachMode::Bound,
            gate: GatePolicy::Wait,
            on_panic: Policy::Return,
            on_error: Policy::Return,
        },
        on_failure,
        body,
    });
    // The header is the first field of the `#[repr(C)]` allocation.
    NonNull::from(Box::leak(shared)).cast()
}

/// The site of the closure of `header`, whatever its body and result
/// types: `Shared` is `#[repr(C)]`, so its header and its site, the
/// fields before those, lie at the same offsets in every `Shared<B, R>`.
///
/// # Safety
///
/// `header` is the header of a closure from `allocate`, alive or kept by
/// [`tombstones`] (whose site stays as it was).
unsafe fn site_of<'a>(header: NonNull<Header>) -> &'a Site {
    // SAFETY: an allocation from `allocate` (caller obligation), a
    // `Shared<B, R>` whose site is at the offset `Shared<(), ()>` has it.
    unsafe { &(*header.cast::<Shared<(), ()>>().as_ptr()).site }
}

/// Drops a `Shared<B, R>` whose last reference was released: drops its
/// body, and keeps the allocation in [`tombstones`] (or frees it, if it
/// is larger than they keep).
///
/// # Safety
///
/// `header` is the header of a `Shared<B, R>` from `allocate`, with no
/// reference left and no call holding it; it was not dropped before.
unsafe fn destroy<B, R>(header: NonNull<Header>) {
    // The body is the only part of a `Shared` with anything to drop.
    const { assert!(!needs_drop::<Header>() && !needs_drop::<Site>() && !needs_drop::<R>()) };
    let shared = header.cast::<Shared<B, R>>().as_ptr();
    // SAFETY: a live `Shared<B, R>` from `allocate` that nothing else
    // reaches (caller obligation). A reference counted on it from now on
    // is a call made after the drop, whose release must not drop it again.
    let name = unsafe {
        (*shared).header.last_release = released_after_drop;
        (*shared).site.name
    };
    // SAFETY: the body is alive and dropped once, here (caller
    // obligation); the allocation stays until `free_allocation`.
    let body = unsafe { &raw mut (*shared).body };
    // SAFETY: as above.
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| unsafe { body.drop_in_place() })) {
        dropped_with_panic(name, payload);
    }
    if size_of::<Shared<B, R>>() <= tombstones::MAX_SIZE {
        // SAFETY: small enough, its body dropped, nothing holds it; its
        // `free` is `free_allocation::<B, R>`.
        unsafe { tombstones::keep(header) };
    } else {
        // SAFETY: its body dropped, nothing holds it.
        unsafe { free_allocation::<B, R>(header) };
    }
}

/// Frees the allocation of a `Shared<B, R>` whose body was dropped.
///
/// # Safety
///
/// `header` is the header of a `Shared<B, R>` from `allocate` whose body
/// was dropped, which nothing uses any more.
unsafe fn free_allocation<B, R>(header: NonNull<Header>) {
    // SAFETY: from `Box::leak` in `allocate` (caller obligation); a
    // `MaybeUninit` has the layout of the `Shared` and drops nothing of it
    // (the body was dropped already, the rest has nothing to drop).
    drop(unsafe { Box::from_raw(header.cast::<MaybeUninit<Shared<B, R>>>().as_ptr()) });
}

/// The last release of a closure that was dropped already (its
/// allocation kept by [`tombstones`]): only a call made after the drop,
/// a use after free by C, counts a reference on it. Caught as that call
/// ends; the body it ran had been dropped.
///
/// # Safety
///
/// `header` is the header of a closure kept by [`tombstones`].
unsafe fn released_after_drop(header: NonNull<Header>) {
    // SAFETY: kept, so its site is readable (caller obligation).
    let name = unsafe { site_of(header) }.name;
    abort_with(&format!(
        "callgate: closure `{name}` was called after it was dropped; aborting"
    ));
}

/// Records that C gave up the owner's reference to the closure of
/// `header`, `by` its `free` ([`FREED`]) or by a once closure's call
/// ([`CALLED`]). If C gave it up before, aborts with a message naming the
/// closure: a second `free`, a once closure's second call, a `free` after
/// its call or a call after its `free`.
///
/// # Safety
///
/// `header` is the header of a closure from `allocate`, alive or kept by
/// [`tombstones`].
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn give_up_owner(header: NonNull<Header>, by: u32) {
    // SAFETY: alive or kept (caller obligation).
    let owner = unsafe { &(*header.as_ptr()).owner };
    // Relaxed: the word orders nothing (the reference count does). A
    // swap reads the last value before its own in the word's modification
    // order, so of two give-ups the second sees the first.
    let before = owner.swap(by, Ordering::Relaxed);
    if before != OWNED {
        // SAFETY: as above.
        unsafe { given_up_twice(header, before, by) };
    }
}

/// The abort of [`give_up_owner`].
///
/// # Safety
///
/// As [`give_up_owner`].
#[cold]
#[inline(never)]
unsafe fn given_up_twice(header: NonNull<Header>, before: u32, by: u32) -> ! {
    // SAFETY: alive or kept (caller obligation).
    let name = unsafe { site_of(header) }.name;
    let what = match (before, by) {
        (FREED, FREED) => format!("closure `{name}` was freed twice"),
        (CALLED, FREED) => {
            format!("once closure `{name}` was freed after its call, which frees it")
        }
        (FREED, _) => format!("once closure `{name}` was called after it was freed"),
        _ => format!("once closure `{name}` was called twice"),
    };
    abort_with(&format!("callgate: {what}; aborting"))
}

#[cold]
#[inline(never)]
fn dropped_with_panic(name: &str, payload: Box<dyn core::any::Any + Send>) {
    report(&format!(
        "callgate: dropping closure `{name}` panicked: {}",
        payload_message(payload)
    ));
}

/// Takes a reference for a call.
///
/// # Safety
///
/// `header` belongs to a live closure: its owner still holds a reference.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn retain(header: NonNull<Header>) {
    // SAFETY: live (caller obligation).
    let refs = unsafe { &(*header.as_ptr()).refs };
    // Relaxed: see "Atomic orderings" in the module docs.
    let old = refs.fetch_add(1, Ordering::Relaxed);
    if old > isize::MAX as usize {
        abort_with("callgate: a closure has more than isize::MAX calls in flight; aborting");
    }
}

/// Gives up one reference; the last one drops the closure, once the calls
/// that announced it have returned.
///
/// # Safety
///
/// The caller owns one reference to the live closure of `header`, and uses
/// neither the reference nor the closure afterwards.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn release(header: NonNull<Header>) {
    // SAFETY: live until this decrement (caller obligation).
    let refs = unsafe { &(*header.as_ptr()).refs };
    // Release/Acquire: see "Atomic orderings" in the module docs.
    if refs.fetch_sub(1, Ordering::Release) != 1 {
        return;
    }
    fence(Ordering::Acquire);
    // SAFETY: the last reference is gone; `last_release` was set by
    // `allocate` for this allocation's type and kind.
    unsafe { ((*header.as_ptr()).last_release)(header) };
}

/// The last release of a closure whose calls may announce it: drops it
/// now, or leaves that to the last of the calls announcing it.
///
/// # Safety
///
/// The last reference to the closure of `header` was just released, by
/// the caller.
unsafe fn retire(header: NonNull<Header>) {
    // SAFETY: no reference is left, but the allocation is alive until
    // destroyed below (caller obligation).
    let shared = unsafe { header.as_ref() };
    if shared.marked != 0 {
        // For helgrind: this thread's reads of the header happen before
        // the drop, which writes to it (`destroy`), on whichever thread
        // the drop runs.
        valgrind::happens_before(header.as_ptr());
    }
    // SAFETY: the closure's own retirement, once (the last reference goes
    // once); a thread announces it only in its context's word, and
    // `CONTEXTS` has every context (nodes are never freed while a
    // closure is alive: only when the library is unloaded).
    let unheld = unsafe {
        shared.retirement.retire(
            header.addr().get(),
            CONTEXTS.iter().map(|node| &node.value.hazard),
        )
    };
    if unheld {
        // SAFETY: no reference left and no call holds it.
        unsafe { destroy_now(header) };
    }
}

/// Drops the closure of `header`.
///
/// # Safety
///
/// Nothing holds the closure any more: no reference, no announcing call.
unsafe fn destroy_now(header: NonNull<Header>) {
    // SAFETY: alive until the call below (caller obligation).
    let shared = unsafe { header.as_ref() };
    if shared.marked != 0 {
        valgrind::happens_after(header.as_ptr());
    }
    // SAFETY: `destroy` was set by `allocate` for this allocation's type;
    // nothing holds the closure (caller obligation).
    unsafe { (shared.destroy)(header) };
}

/// How the calls of a closure keep it alive.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Each call takes a reference and releases it: `Closure::new`, whose
    /// calls take turns anyway.
    Counted,
    /// The one call uses the owner's reference and releases it: a once
    /// closure.
    Owner,
    /// A call on a bound thread whose hazard word is free announces the
    /// closure in it (a store and a swap on a line only that thread
    /// writes), and the drop waits for the calls it finds announcing it;
    /// any other call counts itself, and records that in its context
    /// ([`run_recorded`]): `Closure::concurrent`, whose calls from many
    /// threads at once would otherwise all read-modify-write the one
    /// count.
    Announced,
}

/// What a call holds the closure by, to give up when it returns.
enum Held {
    /// A reference (its own, or the owner's for a once closure).
    Reference,
    /// The announcement in `hazard`, this thread's word.
    Announcement(&'static Hazard),
}

/// Takes what a call of the closure of `header` holds it by: the owner's
/// reference for a once closure, a reference of its own for a
/// `Closure::new`, and for a `Closure::concurrent` an announcement in the
/// hazard word of the thread's context where the thread is bound (bound
/// now if it was not) and the word is free. `None` otherwise (an outer
/// call of the thread, or an abandoned one, holds the word; the thread is
/// attached per call): the call takes a reference and records it in
/// [`run_recorded`].
///
/// Taken before `call`, from the context the thread's slot holds: taken in
/// the body, from the call's frame, it would live in memory across `call`
/// (`call` reads the site in the closure after the body, so the hold is
/// given up after it returns), and the call's records would be kept too
/// (5.5–7.5 against 3.9–5.4 ns per call, `callgate-bench --loop
/// closure_concurrent`).
///
/// # Safety
///
/// `header` belongs to a live closure, whose calls hold it by `hold`, and
/// `site` is its site.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn hold(header: NonNull<Header>, site: &Site, hold: Hold) -> Option<Held> {
    match hold {
        Hold::Owner => {
            // SAFETY: the header of a closure (caller obligation), or of
            // one already dropped and still kept, whose second call this
            // catches.
            unsafe { give_up_owner(header, CALLED) };
            return Some(Held::Reference);
        }
        Hold::Counted => {}
        Hold::Announced => {
            if let Some(node) = bound_context(site) {
                let hazard = &node.value.hazard;
                // SAFETY: live (caller obligation).
                let marked = unsafe { (*header.as_ptr()).marked };
                // The address is exposed: a thread that ends the hold for
                // the call (its exit hook) turns the word back into a
                // pointer (`end_hold`).
                let object = header.as_ptr().expose_provenance();
                // SAFETY:
                // - `node` serves this thread, the only one that announces
                //   through its word, and stays with it (bound, not per
                //   call); if this announces, no other call of the thread
                //   can (the word is taken) until this call withdraws in
                //   `unhold`;
                // - a header is a non-zero multiple of 8, of a closure that
                //   is alive and not retired (the caller may call it).
                if unsafe { hazard.announce(object, marked) } {
                    return Some(Held::Announcement(hazard));
                }
            }
            // A call nested in an announced one, a word left taken by an
            // abandoned call, a thread attached per call, a gate shut.
            crate::hint::rarely_taken();
            return None;
        }
    }
    // SAFETY: live (caller obligation).
    unsafe { retain(header) };
    Some(Held::Reference)
}

/// Gives up what a call held.
///
/// # Safety
///
/// `held` is what the call of the closure of `header` on this thread
/// held, and the call returned: it uses the closure no more.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn unhold(header: NonNull<Header>, held: Held) {
    match held {
        // SAFETY: the call's reference (caller obligation).
        Held::Reference => unsafe { release(header) },
        Held::Announcement(hazard) => {
            // SAFETY: this thread announced through its own word, and the
            // call is over (caller obligation).
            let withdrawn = unsafe { hazard.withdraw() };
            // Anything but the bare address: a retirement waits for this
            // call, or helgrind is told.
            if withdrawn != header.addr().get() {
                // SAFETY: forwarded caller obligation.
                unsafe { end_hold(withdrawn) };
            }
        }
    }
}

/// Ends a hold withdrawn from a hazard word with flags (or nothing, for
/// 0): tells helgrind (under valgrind) that the call's uses of the closure
/// happen before its drop, and releases the call's part of a retirement
/// that waits for it. Called by the call itself, and by the hooks for a
/// call its thread abandoned (the thread exits, or a `fork` child lacks
/// it): a `longjmp` or a forced unwind left it with its announcement.
///
/// # Safety
///
/// `withdrawn` is what a hazard word held, withdrawn by (or for) the call
/// that announced it, which uses the closure no more.
#[cold]
#[inline(never)]
pub(crate) unsafe fn end_hold(withdrawn: usize) {
    // An address `hold` exposed, of a closure still alive: its retirement
    // waits for this hold, or has not started.
    let Some(header) = NonNull::new(core::ptr::with_exposed_provenance_mut::<Header>(
        Hazard::object(withdrawn),
    )) else {
        return;
    };
    if withdrawn & MARKED != 0 {
        valgrind::happens_before(header.as_ptr());
    }
    // SAFETY: a retirement that deferred to the call keeps the closure
    // alive until the call's release; the call releases once.
    if Hazard::deferred(withdrawn) && unsafe { (*header.as_ptr()).retirement.release() } {
        // SAFETY: the last holder of a closure with no reference left.
        unsafe { destroy_now(header) };
    }
}

/// The `free` of every closure: releases the reference C holds. A second
/// `free`, or one after a once closure's call, aborts with a message while
/// the closure is alive or kept by [`tombstones`].
///
/// # Safety
///
/// `data` is NULL, or the data of a closure C owns (from `into_raw_parts`),
/// and C uses it no more.
unsafe extern "C" fn free_closure(data: *mut c_void) {
    if let Some(header) = NonNull::new(data.cast::<Header>()) {
        // SAFETY: the data of a closure (caller obligation), or of one
        // already dropped and still kept, whose second `free` this
        // catches.
        unsafe { give_up_owner(header, FREED) };
        // SAFETY: C gives up its reference (caller obligation), which it
        // held: it had not given it up (checked just above).
        unsafe { release(header) };
    }
}

/// How a closure's body is stored and called.
trait Invoke<Args> {
    /// What the body returns.
    type Out: Outcome;
    /// How a call keeps the closure alive.
    const HOLD: Hold;
    /// Runs the body in the call `frame` serves.
    ///
    /// # Safety
    ///
    /// `header` is the header of the closure whose body `self` is, and the
    /// call holds a reference to it (for a once closure, the owner's): an
    /// `FnMut` call may give up another reference through it (see
    /// `Exclusive::with`).
    unsafe fn invoke(
        &self,
        frame: &Frame,
        header: NonNull<Header>,
        args: Args,
    ) -> Result<<Self::Out as Outcome>::C, Failure>;
}

/// The C result of a body called with `Args`.
type ReturnOf<B, Args> = <<B as Invoke<Args>>::Out as Outcome>::C;

/// Runs one call of the closure whose data is `data`, at the boundary.
///
/// # Safety
///
/// `data` is the data pointer of a live closure whose body is a `B` and
/// whose result is `ReturnOf<B, Args>`; for a once closure, this is its one
/// call.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn run<B: Invoke<Args>, Args>(data: *mut c_void, args: Args) -> ReturnOf<B, Args> {
    let header = NonNull::new(data.cast::<Header>()).unwrap_or_else(|| null_data());
    // SAFETY: a live `Shared<B, ReturnOf<B, Args>>` (caller obligation),
    // kept alive by what this call holds until `unhold` (and until the
    // hold is taken, by the caller: the closure is alive as the call
    // starts).
    let shared = unsafe { &*header.cast::<Shared<B, ReturnOf<B, Args>>>().as_ptr() };
    // SAFETY: live (caller obligation), held by `B::HOLD` as `allocate`
    // recorded; its site.
    let Some(held) = (unsafe { hold(header, &shared.site, B::HOLD) }) else {
        // SAFETY: forwarded caller obligations.
        return unsafe { run_recorded::<B, Args>(header, args) };
    };
    let on_failure = shared.on_failure;
    let result = call(
        &shared.site,
        || on_failure,
        || on_failure,
        // SAFETY: `header` is this closure's, and this call holds it (taken
        // above, or the owner's reference for a once closure).
        |frame| unsafe { shared.body.invoke(frame, header, args) },
    );
    // SAFETY: what this call took, given up after its last use of the
    // closure.
    unsafe { unhold(header, held) };
    result
}

/// [`run`] for a call of a `Closure::concurrent` that cannot announce the
/// closure in its thread's hazard word (see [`hold`]): it counts a
/// reference, and records it in the context it runs on while it runs, so
/// that a `fork` child that lacks the thread gives it up
/// (`give_up_left_behind`).
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
            unsafe { shared.body.invoke(frame, header, args) }
        },
    );
    // SAFETY: the reference taken above, given up after the call's last
    // use of the closure.
    unsafe { release(header) };
    result
}

/// A counted reference of a running call, recorded in the context serving
/// the thread (see `sync::HeldRefs`) until this is dropped.
struct RecordedReference(Option<(&'static ContextNode, usize)>);

impl RecordedReference {
    /// Records the reference this thread's running call holds to the
    /// closure of `header` (taken before, given up after the drop).
    fn new(header: NonNull<Header>) -> RecordedReference {
        // Exposed: a `fork` child turns it back into a pointer.
        let object = header.as_ptr().expose_provenance();
        RecordedReference(
            thread::current().and_then(|node| Some((node, node.value.held.record(object)?))),
        )
    }
}

impl Drop for RecordedReference {
    fn drop(&mut self) {
        if let Some((node, slot)) = self.0 {
            node.value.held.erase(slot);
        }
    }
}

#[cold]
#[inline(never)]
fn null_data() -> ! {
    abort_with("callgate: a closure was called with a NULL data pointer; aborting")
}

/// The body of a `Closure::new` closure: an `FnMut` whose calls take turns.
struct Exclusive<F> {
    /// Whose turn it is to run the body (threads named by their
    /// [`Frame::thread_mark`]).
    turn: Turn,
    /// The mark of the call holding the turn, written by it after taking
    /// it ([`Frame::mark`]): read only by a call that finds the turn held
    /// under its own thread's mark, to tell whether that call is gone.
    holder: UnsafeCell<Mark>,
    body: UnsafeCell<F>,
}

// SAFETY: the body is reached only by `with`, during a turn, which one
// thread at a time holds (`Turn`), so sharing an `Exclusive` moves `F`
// between threads (hence `F: Send`) but never shares it.
unsafe impl<F: Send> Sync for Exclusive<F> {}

impl<F> Exclusive<F> {
    fn new(body: F) -> Exclusive<F> {
        Exclusive {
            turn: Turn::new(),
            holder: UnsafeCell::new(Mark::new(0, 0)),
            body: UnsafeCell::new(body),
        }
    }

    /// Runs `run` on the body once no other thread is in it; an error if
    /// this thread already is (a re-entrant call through C). `frame` is
    /// the call's.
    ///
    /// A call abandoned inside the body (a `longjmp` out of C code it
    /// called, or its thread's exit) leaves its turn held and its
    /// reference to the closure taken. A later call under its mark that
    /// finds the call that took the turn certainly gone takes the turn
    /// back and gives up that reference for it ([`turn_holder_is_gone`]):
    /// a call nested in another callback, if the thread's calls found the
    /// abandoned one gone since (the next call after the jump did, where
    /// the jump left the callback it was nested in too, as a Lua error
    /// caught by `pcall` does); else only the thread's outermost call, by the
    /// abandoned call's mark. A call that started on another stack of the
    /// thread (a coroutine) may be suspended inside the body rather than
    /// gone, and keeps the turn.
    ///
    /// In a `fork` child, a turn held by a call of a thread the child does
    /// not have is taken over by the first call that finds it so, which
    /// gives up that call's reference (see `Turn::begin_noting_wait`). A
    /// call that waits for the turn notes so in its context, so that such
    /// a child gives up its reference too ([`WaitNote`]).
    ///
    /// # Safety
    ///
    /// The call holds a reference to the closure of `header`, whose body
    /// this is.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    unsafe fn with<O>(
        &self,
        frame: &Frame,
        header: NonNull<Header>,
        run: impl FnOnce(&mut F) -> O,
    ) -> Result<O, Failure> {
        // A thread mark is the address of a context, which serves one
        // thread at a time, throughout the call (`Frame::thread_mark`):
        // non-zero, and a multiple of 4 (contexts are 128-byte aligned).
        self.turn.begin_noting_wait(
            frame.thread_mark(),
            // SAFETY: the turn is held under this thread's mark, so
            // `holder` was written by the call that took it, a call on
            // this thread's context: by this thread, or by one whose
            // context it has now through the free list, which orders that
            // thread's accesses before this one's. A write by another
            // thread's later turn came before the turn was taken under
            // this mark again (the turn's Release/Acquire), and that call
            // wrote after it. (A call of this thread that took the turn and
            // has not written its mark yet left the mark of the call it
            // took the turn from: see `turn_holder_is_gone`.)
            || unsafe { turn_holder_is_gone(*self.holder.get()) },
            || {
                // SAFETY: the turn was held by a call that will never end
                // it (a gone call of this thread's, or one of a thread a
                // `fork` left behind), which took a reference (every call
                // of an `FnMut` closure does, before its turn) and will
                // never give it up; this call holds one more, so the count
                // stays above 0. (Here rather than after `begin`: out of
                // the fast path, which then stays small enough for the
                // body to be inlined.)
                unsafe { release(header) };
            },
            // SAFETY: this call holds a reference (caller obligation),
            // which the note names until the call has the turn.
            |turn| unsafe { WaitNote::new(header, turn) },
            reentered,
        )?;
        // SAFETY: this thread holds the turn, and only the holder writes
        // its mark (see above for the readers).
        unsafe { *self.holder.get() = frame.mark() };
        // Ends the turn when `run` returns or unwinds (a panicking body is
        // caught by the call's boundary; the closure stays callable with
        // whatever state the panic left, as a `#[c_callback]` does).
        let _end = EndTurn(self);
        // SAFETY: this thread holds the turn until `_end` drops, and only
        // the holder of the turn reaches the body.
        Ok(run(unsafe { &mut *self.body.get() }))
    }
}

/// For a call that finds a `Closure::new` turn held under its own
/// thread's mark by the call marked `holder`: true when that call is
/// certainly gone, so the asking call may take the turn over.
///
/// From any depth, when the thread's calls found the holder gone while
/// it was still recorded as running, and no other call claimed it since
/// (`Context::claim_gone`): this call claims it. The holder was abandoned
/// inside the body, so it never ended the turn, and a turn under its mark
/// is still its own: a call of this thread that took the turn and has not
/// written its mark yet (interrupted there by a signal handler's call)
/// took it from a call that ended it, whose mark is that of a call that
/// returned, or from a gone call it claimed first. (A call abandoned
/// after it ended its turn, by a handler's `siglongjmp`, would break
/// this: callbacks from signal handlers are unsupported.)
///
/// Otherwise only from the thread's outermost call, by the holder's
/// mark ([`marked_call_is_gone`]): no call of this thread encloses it, so
/// none may have taken the turn without writing its mark yet (a signal
/// handler's call interrupting it there is nested in it, and refused).
///
/// # Safety
///
/// Called from inside a call on this thread; `holder` is the mark of a
/// call made on the context serving this thread (by a call of this
/// thread, or of a thread that had its context before, which handed it on
/// through the free list).
#[cold]
#[inline(never)]
unsafe fn turn_holder_is_gone(holder: Mark) -> bool {
    let claimed = thread::current().is_some_and(|node| node.value.claim_gone(holder));
    // SAFETY: forwarded caller obligations.
    claimed || unsafe { marked_call_is_gone(holder) }
}

/// A `Closure::new` call's note, in its context, that it waits for the
/// closure's turn while holding a reference to it: a `fork` child that
/// lacks the waiting thread gives that reference up
/// (`give_up_left_behind`). Erased when dropped, once the call has the
/// turn (or gave up).
struct WaitNote(Option<(&'static ContextNode, OuterWait)>);

impl WaitNote {
    /// Notes that this thread's call waits for `turn`, the turn of the
    /// closure of `header`.
    ///
    /// # Safety
    ///
    /// The call holds a reference to the closure of `header` until the
    /// note is dropped (or, if it takes the turn, until it ends it).
    #[cold]
    #[inline(never)]
    unsafe fn new(header: NonNull<Header>, turn: &Turn) -> WaitNote {
        // The addresses are exposed: a `fork` child turns them back into
        // pointers.
        let object = header.as_ptr().expose_provenance();
        let turn = core::ptr::from_ref(turn).expose_provenance();
        WaitNote(thread::current().map(|node| (node, node.value.held.note_wait(object, turn))))
    }
}

impl Drop for WaitNote {
    fn drop(&mut self) {
        if let Some((node, outer)) = self.0.take() {
            node.value.held.end_wait(outer);
        }
    }
}

/// In a `fork` child: gives up a reference that a call of a thread the
/// fork left behind held, recorded in that thread's context (see
/// `sync::HeldRefs`), as the call will never give it up. `object` is the
/// closure's exposed address; `turn`, for a call that waited for that
/// closure's turn, the turn's, and `mark` that thread's mark. A call that
/// had taken the turn when the fork came (the turn is held under `mark`)
/// is left to the child's first call of the closure, which takes the turn
/// over and gives its reference up then (see `Exclusive::with`).
///
/// # Safety
///
/// Runs on the only thread of a `fork` child; `object`, `turn` and
/// `mark` come from the context of a thread the child does not have
/// (`HeldRefs::take_left`), once.
#[cfg(unix)]
#[cold]
pub(crate) unsafe fn give_up_left_behind(object: usize, turn: usize, mark: usize) {
    let Some(header) = NonNull::new(core::ptr::with_exposed_provenance_mut::<Header>(object))
    else {
        return;
    };
    if turn != 0 {
        // SAFETY: the turn of a closure the left call held a reference
        // to, alive with it.
        let turn = unsafe { &*core::ptr::with_exposed_provenance::<Turn>(turn) };
        if turn.is_held_under(mark) {
            return;
        }
    }
    // SAFETY: the left call held this reference (recorded after it took
    // it, erased before giving it up) and will never give it up.
    unsafe { release(header) };
}

/// Ends a turn of an `Exclusive` body.
struct EndTurn<'a, F>(&'a Exclusive<F>);

impl<F> Drop for EndTurn<'_, F> {
    fn drop(&mut self) {
        // SAFETY: an `EndTurn` is made only by `Exclusive::with` on the
        // thread whose `begin` just returned `Ok`, and dropped once (if
        // the call is abandoned, not at all: see `with`).
        unsafe { self.0.turn.end() };
    }
}

#[cold]
#[inline(never)]
fn reentered() -> Failure {
    Failure::new(
        "the closure was called again from inside its own call on this thread; an `FnMut` \
         cannot run twice at once (use `Closure::concurrent` with an `Fn`)",
    )
}

/// The body of a `Closure::concurrent` closure: an `Fn + Sync`.
struct Concurrent<F> {
    body: F,
}

/// The body of a `OnceClosure`, taken by its one call.
struct Once<F> {
    body: UnsafeCell<Option<F>>,
}

impl<F> Once<F> {
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn take(&self) -> Result<F, Failure> {
        // SAFETY: a once closure has one call: a second one aborts before
        // it gets here (`hold` gives up the owner's reference for the
        // call, once), so this is the only access to the cell until the
        // closure is dropped.
        let body = unsafe { (*self.body.get()).take() };
        body.ok_or_else(|| Failure::new("the once closure was already called"))
    }
}

/// Generates, for one parameter list: the `Signature` of `fn(..) -> R`,
/// the data-first and data-last C functions, the `Invoke` impls of the
/// three bodies, and the `Fn*Body` impls that pick them.
macro_rules! arity {
    ($first:ident, $last:ident; $($arg:ident: $ty:ident),*) => {
        impl<R: CReturn, $($ty: CValue),*> Signature for fn($($ty),*) -> R {
            type Output = R;
            type DataFirst = unsafe extern "C" fn(*mut c_void, $($ty),*) -> R;
            type DataLast = unsafe extern "C" fn($($ty,)* *mut c_void) -> R;
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
            const HOLD: Hold = Hold::Counted;
            #[cfg_attr(not(callgate_unoptimized), inline(always))]
            unsafe fn invoke(
                &self,
                frame: &Frame,
                header: NonNull<Header>,
                ($($arg,)*): ($($ty,)*),
            ) -> Result<O::C, Failure> {
                // SAFETY: forwarded caller obligation.
                unsafe { self.with(frame, header, |body| body($($arg),*)) }?.into_c()
            }
        }

        impl<F, O: Outcome, $($ty),*> Invoke<($($ty,)*)> for Concurrent<F>
        where
            F: Fn($($ty),*) -> O,
        {
            type Out = O;
            const HOLD: Hold = Hold::Announced;
            #[cfg_attr(not(callgate_unoptimized), inline(always))]
            unsafe fn invoke(
                &self,
                _: &Frame,
                _: NonNull<Header>,
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
            #[cfg_attr(not(callgate_unoptimized), inline(always))]
            unsafe fn invoke(
                &self,
                _: &Frame,
                _: NonNull<Header>,
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

arity!(data_first_0, data_last_0;);
arity!(data_first_1, data_last_1; a1: A1);
arity!(data_first_2, data_last_2; a1: A1, a2: A2);
arity!(data_first_3, data_last_3; a1: A1, a2: A2, a3: A3);
arity!(data_first_4, data_last_4; a1: A1, a2: A2, a3: A3, a4: A4);
arity!(data_first_5, data_last_5; a1: A1, a2: A2, a3: A3, a4: A4, a5: A5);
arity!(data_first_6, data_last_6; a1: A1, a2: A2, a3: A3, a4: A4, a5: A5, a6: A6);
