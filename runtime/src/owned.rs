//! Owned results: values a callback hands to C, which C gives back to a
//! free function the library exports (`callgate::export_free!`).
//!
//! | Rust returns | C receives | C frees it with |
//! |---|---|---|
//! | `CString` | `char *` (`CString::into_raw`) | `void f(char *value)` |
//! | `Box<T>` | `T *` (`Box::into_raw`) | `void f(T *value)` |
//! | `Vec<T>`, `Box<[T]>` | `T *` and the length through `size_t *result_len`; `(NULL, 0)` when empty | `void f(T *ptr, size_t len)` |
//! | `Option` of these | NULL for `None` | the same; NULL is a no-op |
//!
//! A free function may run on any thread, so boxed contents must be `Send`:
//! `export_free!` checks it at the type it declares the function for, the
//! one place a callback's owned result can be freed.
//! A `Vec` is shrunk to its length (`into_boxed_slice`) before C gets it,
//! so the pointer and the length are all it takes to free it. An empty
//! array owns no memory, and C gets it as `(NULL, 0)`, the empty array of
//! C conventions (and of callgate's slice parameters), rather than Rust's
//! dangling non-NULL pointer.

use core::ffi::c_char;
use std::ffi::CString;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::diag::report;
use crate::failure::Failure;
use crate::failure::payload_message;

/// A type a callback can return to C as an owned value; `Freed` is the type
/// of the free function that takes it back (`Option<CString>` → `CString`).
pub trait Owned {
    /// What `callgate::export_free!` names to declare the free function.
    type Freed;
}

/// An owned result C receives as one pointer.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned to C as an owned value",
    label = "not an owned result",
    note = "owned results are `CString`, `Box<T>`, `Vec<T>`, `Box<[T]>`, and `Option`s of these"
)]
pub trait OwnedValue: Owned {
    /// The pointer C receives.
    type Raw: Copy;
    /// What `None` (and a failure) becomes.
    const NULL: Self::Raw;
    /// Gives up ownership to C.
    fn into_raw(self) -> Self::Raw;
}

/// An owned result C receives as a pointer and a length.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned to C as an owned array",
    label = "not an owned array",
    note = "owned arrays are `Vec<T>` and `Box<[T]>`, and `Option`s of these"
)]
pub trait OwnedSlice: Owned {
    /// The element type.
    type Elem;
    /// Gives up ownership to C: the pointer to the first element (NULL for
    /// `None` and for an empty array) and the length.
    fn into_raw_parts(self) -> (*mut Self::Elem, usize);
}

/// A type whose free function takes one pointer: the `Freed` type of an
/// [`OwnedValue`].
pub trait FreeValue: OwnedValue {
    /// Takes back ownership of a non-null pointer.
    ///
    /// # Safety
    ///
    /// `raw` came from [`OwnedValue::into_raw`] of this type and is not used
    /// again.
    unsafe fn from_raw(raw: Self::Raw) -> Self;
    /// Whether `raw` is NULL.
    fn is_null(raw: Self::Raw) -> bool;
}

impl Owned for CString {
    type Freed = CString;
}

impl OwnedValue for CString {
    type Raw = *mut c_char;
    const NULL: *mut c_char = core::ptr::null_mut();
    #[hot_path]
    fn into_raw(self) -> *mut c_char {
        CString::into_raw(self)
    }
}

impl FreeValue for CString {
    #[inline]
    unsafe fn from_raw(raw: *mut c_char) -> CString {
        // SAFETY: it came from `CString::into_raw` (caller obligation).
        unsafe { CString::from_raw(raw) }
    }
    #[inline]
    fn is_null(raw: *mut c_char) -> bool {
        raw.is_null()
    }
}

impl<T> Owned for Box<T> {
    type Freed = Box<T>;
}

impl<T> OwnedValue for Box<T> {
    type Raw = *mut T;
    const NULL: *mut T = core::ptr::null_mut();
    #[hot_path]
    fn into_raw(self) -> *mut T {
        Box::into_raw(self)
    }
}

impl<T> FreeValue for Box<T> {
    #[inline]
    unsafe fn from_raw(raw: *mut T) -> Box<T> {
        // SAFETY: it came from `Box::into_raw` (caller obligation).
        unsafe { Box::from_raw(raw) }
    }
    #[inline]
    fn is_null(raw: *mut T) -> bool {
        raw.is_null()
    }
}

impl<T> Owned for Box<[T]> {
    type Freed = Box<[T]>;
}

impl<T> OwnedSlice for Box<[T]> {
    type Elem = T;
    #[hot_path]
    fn into_raw_parts(self) -> (*mut T, usize) {
        if self.is_empty() {
            // Nothing to free: an empty boxed slice has no allocation.
            return (core::ptr::null_mut(), 0);
        }
        let len = self.len();
        (Box::into_raw(self).cast::<T>(), len)
    }
}

impl<T> Owned for Vec<T> {
    type Freed = Box<[T]>;
}

impl<T> OwnedSlice for Vec<T> {
    type Elem = T;
    #[hot_path]
    fn into_raw_parts(self) -> (*mut T, usize) {
        self.into_boxed_slice().into_raw_parts()
    }
}

impl<O: Owned> Owned for Option<O> {
    type Freed = O::Freed;
}

impl<O: OwnedValue> OwnedValue for Option<O> {
    type Raw = O::Raw;
    const NULL: O::Raw = O::NULL;
    #[hot_path]
    fn into_raw(self) -> O::Raw {
        match self {
            Some(value) => value.into_raw(),
            None => O::NULL,
        }
    }
}

impl<O: OwnedSlice> OwnedSlice for Option<O> {
    type Elem = O::Elem;
    #[hot_path]
    fn into_raw_parts(self) -> (*mut O::Elem, usize) {
        match self {
            Some(value) => value.into_raw_parts(),
            None => (core::ptr::null_mut(), 0),
        }
    }
}

/// The pointer C receives for an owned result.
#[hot_path]
pub fn owned_value<T: OwnedValue>(value: T) -> T::Raw {
    value.into_raw()
}

/// The pointer C receives for an owned array; its length goes to
/// `*result_len`.
#[hot_path]
pub fn owned_slice<T: OwnedSlice>(value: T, result_len: &mut usize) -> *mut T::Elem {
    let (ptr, len) = value.into_raw_parts();
    *result_len = len;
    ptr
}

/// The `size_t *result_len` out-parameter of a callback returning an owned
/// array, set to 0 until the result is there.
///
/// # Safety
///
/// A non-null, aligned `p` must be valid for writing a `usize` that nothing
/// else accesses for `'a`.
#[hot_path]
pub unsafe fn result_len_arg<'a>(
    p: *mut usize,
    name: &'static str,
) -> Result<&'a mut usize, Failure> {
    // SAFETY: forwarded caller obligation.
    let len = unsafe { crate::args::mut_arg(p, name) }?;
    *len = 0;
    Ok(len)
}

/// Sets `*result_len` to 0 when a callback returning an owned array fails,
/// if `p` can be written at all.
///
/// # Safety
///
/// As [`result_len_arg`].
#[cold]
pub unsafe fn clear_result_len(p: *mut usize) {
    if !p.is_null() && p.is_aligned() {
        // SAFETY: non-null and aligned (checked); writable (caller obligation).
        unsafe { p.write(0) };
    }
}

/// Frees a value C hands back to the free function `function`; NULL is a
/// no-op. A panic in the value's `Drop` is reported on standard error and
/// goes no further.
///
/// # Safety
///
/// `raw` is NULL or came from a callback of this library that returned a
/// `T`, and is not used again; `T` may be dropped on the calling thread (its
/// contents are `Send`, which `export_free!` checks).
#[inline]
pub unsafe fn free_value<T: FreeValue>(raw: T::Raw, function: &'static str) {
    if T::is_null(raw) {
        return;
    }
    // SAFETY: non-null, from `into_raw` of a `T` (caller obligation).
    let value = unsafe { T::from_raw(raw) };
    drop_reporting_panics(value, function);
}

/// Frees an array C hands back, with its length, to the free function
/// `function`; a NULL `ptr` (an empty array, or `None`) is a no-op.
///
/// # Safety
///
/// `ptr` is NULL, or it and `len` came from a callback of this library that
/// returned an owned array of `T`s, and they are not used again; `T` is
/// `Send` (which `export_free!` checks), as this may be any thread.
#[inline]
pub unsafe fn free_slice<T>(ptr: *mut T, len: usize, function: &'static str) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: `(ptr, len)` came from `Box::<[T]>::into_raw` (caller
    // obligation; `Vec`s are boxed slices by then).
    let value = unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(ptr, len)) };
    drop_reporting_panics(value, function);
}

fn drop_reporting_panics<T>(value: T, function: &'static str) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        panicked_in_drop(function, payload);
    }
}

#[cold]
#[inline(never)]
fn panicked_in_drop(function: &'static str, payload: Box<dyn core::any::Any + Send>) {
    report(&format!(
        "callgate: dropping the value passed to `{function}` panicked: {}",
        payload_message(payload)
    ));
}

/// Implemented by `callgate::export_free!(name: T)` for a type of the free
/// function's name (in the type namespace), for `T`'s [`Owned::Freed`]: a
/// callback's `free = name` is checked against it at compile time, at the
/// user's `name`, by naming `<name as Frees<Freed>>::FREES`.
#[diagnostic::on_unimplemented(
    message = "this free function does not free what the callback returns (`{T}`)",
    label = "frees another type",
    note = "declare a free function for it with `callgate::export_free!(name: {T})`"
)]
pub trait Frees<T> {
    /// What the check names.
    const FREES: () = ();
}

/// Exports the function that frees owned results of one type: the
/// `#[c_callback]`s that return them name it with `free = name`, and the
/// generated header declares it.
///
/// `callgate::export_free!(pub name: Type)` exports `name` (under that
/// symbol) for `Type`, which is one of:
///
/// | `Type` | C declaration |
/// |---|---|
/// | `CString` | `void name(char *value);` |
/// | `Box<T>` (`T: Send`) | `void name(T *value);` |
/// | `Vec<T>` or `Box<[T]>` (`T: Send`) | `void name(T *ptr, size_t len);` — the length the array came with |
///
/// A callback returning `Option<Type>` (or, for arrays, either `Vec<T>` or
/// `Box<[T]>`) uses the same function. An empty array reaches C as
/// `(NULL, 0)`. Freeing NULL is a no-op; a panic in the value's `Drop` is
/// written to standard error and goes no further. C must free each value
/// once, with the function of its type, and not use it afterwards; freeing
/// something twice, or something that did not come from the library, is
/// undefined behaviour, as with `free(3)`.
///
/// `#[c_callback(free = name)]` is checked at compile time: it must name a
/// function declared by `export_free!` for the type the callback returns.
/// Doc comments and `#[cfg]` before the name apply to the function.
///
/// ```
/// use callgate::c_callback;
/// use std::ffi::{CString, c_char};
///
/// callgate::export_free!(pub doc_string_free: CString);
/// callgate::export_free!(pub doc_bytes_free: Vec<u8>);
///
/// /// C: `char *doc_greeting(const char *name);` — free it with `doc_string_free`.
/// #[c_callback(free = doc_string_free)]
/// fn doc_greeting(name: &str) -> CString {
///     CString::new(format!("hello, {name}")).unwrap_or_default()
/// }
///
/// /// C: `uint8_t *doc_repeat(uint8_t byte, size_t count, size_t *result_len);`
/// #[c_callback(free = doc_bytes_free)]
/// fn doc_repeat(byte: u8, count: usize) -> Vec<u8> {
///     vec![byte; count]
/// }
///
/// // SAFETY: a C string; the result came from `doc_greeting`.
/// unsafe {
///     let greeting = doc_greeting(c"C".as_ptr());
///     assert_eq!(std::ffi::CStr::from_ptr(greeting), c"hello, C");
///     doc_string_free(greeting);
///     doc_string_free(std::ptr::null_mut::<c_char>()); // a no-op
/// }
/// let mut len = 0;
/// // SAFETY: a valid `size_t *`; the result came from `doc_repeat`.
/// unsafe {
///     let bytes = doc_repeat(7, 3, &mut len);
///     assert_eq!(std::slice::from_raw_parts(bytes, len), [7, 7, 7]);
///     doc_bytes_free(bytes, len);
/// }
/// ```
#[macro_export]
macro_rules! export_free {
    ($($declaration:tt)*) => {
        $crate::__private::export_free_impl! { $crate; $($declaration)* }
    };
}

#[cfg(test)]
mod tests;
