//! Rust state behind the `void *user_data` C APIs keep: [`UserData`] turns
//! a value into the pointer and gives back the destroy function C calls
//! when it is done; the `#[user_data]` parameter of `#[c_callback]` turns
//! the pointer back into a reference (`user_data_ref` and friends, below).

use core::ffi::c_void;
use core::fmt;
use core::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::args;
use crate::diag::report;
use crate::failure::{Failure, payload_message};

/// A Rust value to hand to a C API as its `void *user_data`, with the
/// destroy function C calls when it no longer needs it.
///
/// `UserData::new(value).into_raw()` boxes the value and gives up Rust's
/// ownership: the `void *` C keeps *is* the owner from then on, and the
/// value is dropped exactly once, by [`UserData::<T>::destroy`] — the
/// `void (*)(void *)` shape of SQLite's `xDestroy`, glib's
/// `GDestroyNotify`, libcurl's and libuv's cleanup hooks — on whichever
/// thread C calls it from. A panic in the value's `Drop` is caught there
/// and written to standard error; nothing unwinds into C.
///
/// A callback reads the value back with a `#[user_data]` parameter of
/// [`#[c_callback]`](crate::c_callback) (`&T` or `&mut T`, NULL is an error
/// naming the parameter): C passes the pointer as that parameter, or,
/// where the callback type has no `void *` (SQLite's `xFunc`, a
/// `lua_CFunction`), `#[user_data(from = …)]` reaches it through the
/// other parameters, as below. [`ref_from_raw`](UserData::ref_from_raw) /
/// [`mut_from_raw`](UserData::mut_from_raw) convert a pointer found
/// anywhere else; ownership comes back with [`from_raw`](UserData::from_raw).
///
/// # Registration failures: nothing to free twice
///
/// `into_raw` consumes the `UserData`, so after it no Rust value owns the
/// state: an early return, a `?` or a panic between `into_raw` and the
/// registration call cannot free it, and neither can Rust code that frees
/// "its" copy when registration fails — there is none. Whether a failed
/// registration freed the pointer is the C API's rule, and the only time
/// Rust code calls `destroy` (or `from_raw`) itself is when the API says it
/// did not. SQLite has both rules:
///
/// - `sqlite3_create_function_v2` calls `xDestroy(pApp)` when it fails: hand
///   it `into_raw()` and `destroy`, and do nothing on failure. (Freeing the
///   state again on failure is the double free of rusqlite issue 839.)
/// - `sqlite3_create_collation_v2` does *not* call `xDestroy` when it fails
///   ("the application should dispose of the data pointer itself"): on
///   failure call `destroy` on the pointer once, yourself.
///
/// ```no_run
/// use callgate::{UserData, c_callback};
/// use std::ffi::{c_char, c_int, c_void};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// #[repr(C)]
/// struct sqlite3 { _opaque: [u8; 0] }
/// #[repr(C)]
/// struct sqlite3_context { _opaque: [u8; 0] }
/// #[repr(C)]
/// struct sqlite3_value { _opaque: [u8; 0] }
///
/// unsafe extern "C" {
///     fn sqlite3_create_function_v2(
///         db: *mut sqlite3,
///         name: *const c_char,
///         n_arg: c_int,
///         text_rep: c_int,
///         app: *mut c_void,
///         x_func: Option<unsafe extern "C" fn(*mut sqlite3_context, c_int, *mut *mut sqlite3_value)>,
///         x_step: Option<unsafe extern "C" fn(*mut sqlite3_context, c_int, *mut *mut sqlite3_value)>,
///         x_final: Option<unsafe extern "C" fn(*mut sqlite3_context)>,
///         x_destroy: Option<unsafe extern "C" fn(*mut c_void)>,
///     ) -> c_int;
///     fn sqlite3_user_data(ctx: *mut sqlite3_context) -> *mut c_void;
///     fn sqlite3_result_int64(ctx: *mut sqlite3_context, value: i64);
/// }
///
/// struct Counter {
///     calls: AtomicU64,
/// }
///
/// /// `count()`: how many times this connection called it. Its state is
/// /// pApp, which SQLite hands over as `sqlite3_user_data(ctx)`.
/// #[c_callback(local)]
/// fn count(
///     ctx: *mut sqlite3_context,
///     argc: c_int,
///     #[len = argc] _argv: &[*mut sqlite3_value],
///     // SAFETY: SQLite passes a live context; pApp came from `into_raw` below.
///     #[user_data(from = unsafe { sqlite3_user_data(ctx) })] counter: &Counter,
/// ) {
///     let calls = counter.calls.fetch_add(1, Ordering::Relaxed) + 1;
///     // SAFETY: as above.
///     unsafe { sqlite3_result_int64(ctx, calls as i64) };
/// }
///
/// fn register(db: *mut sqlite3) -> Result<(), c_int> {
///     let state = UserData::new(Counter { calls: AtomicU64::new(0) }).into_raw();
///     // SAFETY: `db` is an open connection; SQLite owns `state` from here
///     // and calls `destroy` on it exactly once — also if this call fails.
///     let rc = unsafe {
///         sqlite3_create_function_v2(
///             db, c"count".as_ptr(), 0, 1, state,
///             Some(count), None, None, Some(UserData::<Counter>::destroy),
///         )
///     };
///     if rc != 0 {
///         // Nothing to free: SQLite already destroyed `state`.
///         return Err(rc);
///     }
///     Ok(())
/// }
/// ```
pub struct UserData<T> {
    value: Box<T>,
}

impl<T: Send + 'static> UserData<T> {
    /// Boxes `value`. `T` is `Send` because C may destroy it on any thread.
    pub fn new(value: T) -> UserData<T> {
        UserData {
            value: Box::new(value),
        }
    }

    /// Gives the value to C: the pointer, never NULL, points to the `T`,
    /// and owns it until [`destroy`](UserData::destroy) or
    /// [`from_raw`](UserData::from_raw) takes it back, exactly once.
    #[must_use = "the value leaks unless the pointer is passed to `destroy` or `from_raw`"]
    pub fn into_raw(self) -> *mut c_void {
        Box::into_raw(self.value).cast()
    }

    /// Takes back ownership of a pointer from [`into_raw`](UserData::into_raw),
    /// e.g. in the last callback of a one-shot request (libuv's
    /// `after_work_cb`), or when a C API says it did not keep it.
    ///
    /// # Safety
    ///
    /// `raw` came from `UserData::<T>::into_raw` (the same `T`), and neither
    /// C nor Rust uses it again.
    pub unsafe fn from_raw(raw: *mut c_void) -> UserData<T> {
        // SAFETY: `raw` came from `Box::<T>::into_raw` and is not used again
        // (caller obligation).
        let value = unsafe { Box::from_raw(raw.cast::<T>()) };
        UserData { value }
    }

    /// The destroy function to hand C with the pointer: drops the value
    /// `raw` owns; NULL is a no-op. It may run on any thread; a panic in
    /// `T`'s `Drop` is written to standard error and goes no further.
    ///
    /// # Safety
    ///
    /// `raw` is NULL, or came from `UserData::<T>::into_raw` (the same `T`)
    /// and is not used afterwards, by C or by Rust — in particular no
    /// callback is running with it.
    pub unsafe extern "C" fn destroy(raw: *mut c_void) {
        if raw.is_null() {
            return;
        }
        // SAFETY: non-null, from `into_raw` of a `UserData<T>`, and not used
        // again (caller obligation).
        let value = unsafe { Box::from_raw(raw.cast::<T>()) };
        if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
            dropped_with_panic(core::any::type_name::<T>(), payload);
        }
    }

    /// The value back out of its box.
    pub fn into_inner(self) -> T {
        *self.value
    }
}

impl<T> UserData<T> {
    /// `&T` from a pointer C handed back: one from
    /// [`into_raw`](UserData::into_raw), or any pointer to a live `T` (a
    /// stack value passed as a `qsort_r` argument). `None` for NULL.
    ///
    /// # Safety
    ///
    /// A non-null `raw` points to a live, aligned `T` that nothing mutates
    /// while the reference is in use, and that stays alive for `'a`.
    pub unsafe fn ref_from_raw<'a>(raw: *const c_void) -> Option<&'a T> {
        // SAFETY: NULL or a valid, aligned `T` for 'a (caller obligation).
        unsafe { raw.cast::<T>().as_ref() }
    }

    /// `&mut T` from a pointer C handed back; `None` for NULL.
    ///
    /// # Safety
    ///
    /// As [`ref_from_raw`](UserData::ref_from_raw), and nothing else reads
    /// or writes the `T` while the reference is in use (C makes one call at
    /// a time with this pointer).
    pub unsafe fn mut_from_raw<'a>(raw: *mut c_void) -> Option<&'a mut T> {
        // SAFETY: NULL or a valid, aligned, unaliased `T` for 'a (caller
        // obligation).
        unsafe { raw.cast::<T>().as_mut() }
    }
}

impl<T> Deref for UserData<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for UserData<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.value
    }
}

impl<T: fmt::Debug> fmt::Debug for UserData<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UserData").field(&self.value).finish()
    }
}

#[cold]
#[inline(never)]
fn dropped_with_panic(type_name: &str, payload: Box<dyn core::any::Any + Send>) {
    report(&format!(
        "callgate: dropping user data of type `{type_name}` panicked: {}",
        payload_message(payload)
    ));
}

/// A type a `#[user_data] x: &T` parameter may point to. C may call the
/// callback from several threads at once with the same pointer, so `T`
/// must be `Sync`, as for any `&T` shared between threads.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be `#[user_data]` behind `&`: C may call from several threads at \
               once, so it must be `Sync`",
    label = "not `Sync`",
    note = "take `&mut {Self}` if C makes one call at a time with the pointer, or make the state \
            `Sync` (atomics, a `Mutex`)"
)]
pub trait SharedUserData {
    /// What the check names, at the user's type.
    fn shared() {}
}

#[diagnostic::do_not_recommend]
impl<T: Sync + ?Sized> SharedUserData for T {}

/// A type a `#[user_data] x: &mut T` parameter may point to: C may call
/// from any thread, so `T` must be `Send`, as for any `&mut T` that moves
/// between threads.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be `#[user_data]` behind `&mut`: C may call from any thread, so it \
               must be `Send`",
    label = "not `Send`",
    note = "keep thread-bound state (`Rc`, `RefCell` shared with other code) out of user data, or \
            use `#[local]` for per-thread state"
)]
pub trait ExclusiveUserData {
    /// What the check names, at the user's type.
    fn exclusive() {}
}

#[diagnostic::do_not_recommend]
impl<T: Send + ?Sized> ExclusiveUserData for T {}

/// `&T` from the `void *` of a `#[user_data]` parameter.
///
/// # Safety
///
/// A non-null, aligned `p` points to a live `T` that nothing mutates for `'a`.
#[hot_path]
pub unsafe fn user_data_ref<'a, T: SharedUserData>(
    p: *mut c_void,
    name: &'static str,
) -> Result<&'a T, Failure> {
    // SAFETY: forwarded caller obligation.
    unsafe { args::ref_arg(p.cast_const().cast::<T>(), name) }
}

/// `&mut T` from the `void *` of a `#[user_data]` parameter.
///
/// # Safety
///
/// A non-null, aligned `p` points to a live `T` nothing else accesses for `'a`.
#[hot_path]
pub unsafe fn user_data_mut<'a, T: ExclusiveUserData>(
    p: *mut c_void,
    name: &'static str,
) -> Result<&'a mut T, Failure> {
    // SAFETY: forwarded caller obligation.
    unsafe { args::mut_arg(p.cast::<T>(), name) }
}

/// `Option<&T>` from the nullable `void *` of a `#[user_data]` parameter.
///
/// # Safety
///
/// As [`user_data_ref`] when `p` is non-null.
#[hot_path]
pub unsafe fn opt_user_data_ref<'a, T: SharedUserData>(
    p: *mut c_void,
    name: &'static str,
) -> Result<Option<&'a T>, Failure> {
    // SAFETY: forwarded caller obligation.
    unsafe { args::opt_ref_arg(p.cast_const().cast::<T>(), name) }
}

/// `Option<&mut T>` from the nullable `void *` of a `#[user_data]` parameter.
///
/// # Safety
///
/// As [`user_data_mut`] when `p` is non-null.
#[hot_path]
pub unsafe fn opt_user_data_mut<'a, T: ExclusiveUserData>(
    p: *mut c_void,
    name: &'static str,
) -> Result<Option<&'a mut T>, Failure> {
    // SAFETY: forwarded caller obligation.
    unsafe { args::opt_mut_arg(p.cast::<T>(), name) }
}

#[cfg(test)]
mod tests;
