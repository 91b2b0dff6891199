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
//! any thread has returned. What a call abandoned by a `longjmp` keeps,
//! and what a `fork` child gives up, are in the guide's Guarantees and
//! Known limits pages.

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::fmt::{self, Display};
use core::ptr::NonNull;

use crate::failure::Failure;

use allocation::{Header, allocate, release};
use call::{Concurrent, Once};
use exclusive::Exclusive;
use hold::Hold;
use owner::free_closure;

mod allocation;
mod call;
mod exclusive;
mod fork;
mod hold;
mod owner;
#[cfg(test)]
mod tests;
mod tombstones;

#[cfg(unix)]
pub(crate) use fork::give_up_left_behind;
pub(crate) use hold::end_hold;
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
    #[hot_path]
    fn into_c(self) -> Result<T, Failure> {
        Ok(self)
    }
}

impl<T: CReturn, E: Display> Outcome for Result<T, E> {
    type C = T;
    #[hot_path]
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
    /// `unsafe extern "C" fn(A, B, …) -> Output`, for
    /// [`Closure::with_accessor`].
    type Accessed: Copy;
    /// The parameters as a tuple.
    #[doc(hidden)]
    type Args: Copy;
}

mod sealed {
    /// What the closure traits extend, implemented for closures (and other
    /// `FnOnce` values) of C values only: the `unsafe extern "C"`
    /// functions a [`Closure`](super::Closure) holds read the data as the
    /// closure type that made them, so no other implementation may name
    /// them. Unreachable outside this module, so the traits are sealed.
    pub trait Body<S, M> {}

    /// What [`Accessor`](super::Accessor) extends: how the accessed C
    /// function calls it.
    pub trait Accessor<S: super::Signature> {
        /// The closure's data, found among the call's arguments.
        fn data(&self, args: &S::Args) -> *mut core::ffi::c_void;
    }
}

/// How a C function with no `void *` parameter finds its closure's data
/// among its arguments, for [`Closure::with_accessor`]: a closure
/// `Fn(A, B, …) -> *mut c_void + Copy + Send + Sync + 'static` that
/// captures nothing (zero-sized: the C function makes its own copy),
/// or a `fn` item. One that captures fails to compile where
/// `with_accessor` is called.
#[diagnostic::on_unimplemented(
    message = "this accessor cannot find a closure's data among these C parameters",
    label = "not a data accessor",
    note = "an accessor takes the closure's C parameters (annotated) and returns the \
            `*mut c_void` data, captures nothing, and is `Copy + Send + Sync + 'static`"
)]
pub trait Accessor<S: Signature>: sealed::Accessor<S> + Copy + Send + Sync + 'static {}

impl<S: Signature, G: sealed::Accessor<S> + Copy + Send + Sync + 'static> Accessor<S> for G {}

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
    /// The C function of this closure type whose data `accessor` finds
    /// (which it copies).
    #[doc(hidden)]
    fn accessed<G: Accessor<S>>(accessor: G) -> S::Accessed;
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
                Hold::Turn,
            ),
            data_first,
            data_last,
        }
    }

    /// As [`new`](Closure::new), and also gives a C function with no
    /// `void *` parameter, `R (*)(A, B, …)`, for C APIs whose callback
    /// reaches its data another way: SQLite's `xFunc` through
    /// `sqlite3_user_data(ctx)`, a `lua_CFunction` through an upvalue.
    /// `accessor` finds the data among the call's arguments (it captures
    /// nothing; see [`Accessor`]); the function then runs the closure as
    /// `data_first` and `data_last` do, with the same ownership: C calls
    /// it only while the accessor returns this closure's [`data`](Closure::data).
    /// A panic in the accessor aborts the process with a message (there is
    /// no closure yet to take the fallback from).
    ///
    /// ```
    /// use callgate::Closure;
    /// use std::ffi::{c_int, c_void};
    ///
    /// // A C API whose callback takes a context, not a `void *`:
    /// // `int context_data(struct context *)` gives back the data registered with it.
    /// #[repr(C)]
    /// struct Context {
    ///     data: *mut c_void,
    ///     value: c_int,
    /// }
    /// unsafe extern "C" fn context_data(context: *mut Context) -> *mut c_void {
    ///     // SAFETY: a live context (caller obligation).
    ///     unsafe { (*context).data }
    /// }
    ///
    /// let mut total = 0;
    /// let (add, add_fn) = Closure::with_accessor(
    ///     -1,
    ///     // SAFETY: the C API passes live contexts.
    ///     |context: *mut Context| unsafe { context_data(context) },
    ///     move |context: *mut Context| -> c_int {
    ///         // SAFETY: as above.
    ///         total += unsafe { (*context).value };
    ///         total
    ///     },
    /// );
    /// let mut context = Context { data: add.data(), value: 20 };
    /// // SAFETY: `context` carries the closure's data, and the closure outlives the calls.
    /// unsafe {
    ///     assert_eq!(add_fn(&mut context), 20);
    ///     context.value = 22;
    ///     assert_eq!(add_fn(&mut context), 42);
    /// }
    /// ```
    pub fn with_accessor<G: Accessor<S>, F: FnMutBody<S, M>, M>(
        on_failure: S::Output,
        accessor: G,
        body: F,
    ) -> (Closure<S>, S::Accessed) {
        // A capturing accessor fails to compile here, at the caller's line.
        let () = call::CapturesNothing::<G>::CHECK;
        (Closure::new(on_failure, body), F::accessed(accessor))
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
/// `free(data)` instead, once. Dropping a `OnceClosure` that was not handed
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
