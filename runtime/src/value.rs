//! Values C passes by value: the types that take every value C can pass
//! ([`CValue`]), and the checked conversion of the others (`CArg`), which
//! `#[derive(CEnum)]` implements for fieldless enums.
//!
//! C can pass any bit pattern of a parameter's C type. An integer, a float,
//! a raw pointer is valid whatever the bits; a Rust enum, a `NonZero*`, a
//! `char` is not, and receiving one of their invalid values is undefined
//! behaviour before the body runs. So a `#[c_callback]` parameter passed
//! by value is either a [`CValue`], received as it is, or a type whose C
//! parameter is some other `CValue` (its `CArg::Raw`) that the trampoline
//! converts and checks at the start of the call.

use core::ffi::c_int;
use core::fmt::Display;
use core::marker::PhantomData;
use core::num::{
    NonZeroI8, NonZeroI16, NonZeroI32, NonZeroI64, NonZeroIsize, NonZeroU8, NonZeroU16, NonZeroU32,
    NonZeroU64, NonZeroUsize,
};
use core::ptr::NonNull;

use crate::failure::Failure;

/// A type every value of which C can pass, with the same layout in C and
/// Rust: what a `#[c_callback]` parameter passed by value and the
/// parameters and results of a [`Closure`](crate::Closure) may be.
///
/// Implemented for the integers (not 128-bit), `f32`, `f64`, `bool` (C's
/// `_Bool` is 0 or 1 by the ABI), raw pointers, `Option<NonNull<T>>`,
/// `Option<NonZero*>` and `Option<extern "C" fn(…) -> R>` of up to 12
/// parameters (NULL and 0 are `None`), and `PhantomData`; the `c_int`-style aliases are these
/// integers. Derive it (`#[derive(Clone, Copy, callgate::CValue)]`)
/// for a `#[repr(C)]` or `#[repr(transparent)]` struct whose fields are all
/// `CValue`s. A fieldless enum is not one: C may pass an integer that is no
/// variant; derive [`CEnum`](derive@crate::CEnum) for it instead, which
/// checks the value at the start of each call.
///
/// # Safety
///
/// `Self` is FFI-safe by value (what rustc's `improper_ctypes` accepts), and
/// every bit pattern of its size, its padding aside, is a valid `Self`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed by value from C unchecked",
    label = "C may pass a value that is not a valid `{Self}`",
    note = "derive `callgate::CValue` for a `#[repr(C)]` struct whose fields take every bit \
            pattern, `callgate::CEnum` for a fieldless enum, or take the integer (or a raw \
            pointer) and convert it in the body"
)]
pub unsafe trait CValue: Copy {}

macro_rules! c_values {
    ($($ty:ty),*) => {
        $(
            // SAFETY: a scalar with the same representation in C, valid
            // for every bit pattern (`bool`: C's `_Bool` is 0 or 1 by the ABI).
            unsafe impl CValue for $ty {}
        )*
    };
}

c_values!(
    i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64, bool
);

macro_rules! optional_non_zero {
    ($($ty:ty),*) => {
        $(
            // SAFETY: `Option<NonZero*>` has the layout of its integer
            // (guaranteed), and 0 is `None`.
            unsafe impl CValue for Option<$ty> {}
        )*
    };
}

optional_non_zero!(
    NonZeroI8,
    NonZeroI16,
    NonZeroI32,
    NonZeroI64,
    NonZeroIsize,
    NonZeroU8,
    NonZeroU16,
    NonZeroU32,
    NonZeroU64,
    NonZeroUsize
);

// SAFETY: a zero-sized marker: there are no bits to be invalid.
unsafe impl<T: ?Sized> CValue for PhantomData<T> {}
// SAFETY: a thin pointer is a C pointer, valid whatever its address.
unsafe impl<T> CValue for *const T {}
// SAFETY: a thin pointer is a C pointer, valid whatever its address.
unsafe impl<T> CValue for *mut T {}
// SAFETY: NULL-niche-optimised (guaranteed): a C pointer, NULL is `None`.
unsafe impl<T> CValue for Option<NonNull<T>> {}

macro_rules! optional_function_pointers {
    ($($arg:ident),*) => {
        optional_function_pointers!(@one [extern "C" fn($($arg),*) -> R] $($arg),*);
        optional_function_pointers!(@one [unsafe extern "C" fn($($arg),*) -> R] $($arg),*);
        optional_function_pointers!(@one [extern "C-unwind" fn($($arg),*) -> R] $($arg),*);
        optional_function_pointers!(@one [unsafe extern "C-unwind" fn($($arg),*) -> R] $($arg),*);
    };
    (@one [$($pointer:tt)*] $($arg:ident),*) => {
        // SAFETY: NULL-niche-optimised (guaranteed): a C function pointer,
        // NULL is `None`.
        unsafe impl<R, $($arg),*> CValue for Option<$($pointer)*> {}
    };
}

optional_function_pointers!();
optional_function_pointers!(A);
optional_function_pointers!(A, B);
optional_function_pointers!(A, B, C);
optional_function_pointers!(A, B, C, D);
optional_function_pointers!(A, B, C, D, E);
optional_function_pointers!(A, B, C, D, E, F);
optional_function_pointers!(A, B, C, D, E, F, G);
optional_function_pointers!(A, B, C, D, E, F, G, H);
optional_function_pointers!(A, B, C, D, E, F, G, H, I);
optional_function_pointers!(A, B, C, D, E, F, G, H, I, J);
optional_function_pointers!(A, B, C, D, E, F, G, H, I, J, K);
optional_function_pointers!(A, B, C, D, E, F, G, H, I, J, K, L);

/// A type a `#[c_callback]` parameter may have by value: C passes its
/// `Raw` value, which the trampoline converts at the start of the call.
///
/// Every [`CValue`] is its own `Raw`, received as it is;
/// `#[derive(CEnum)]` implements it for a fieldless enum, whose `Raw` is
/// the integer of its `repr` and whose conversion fails for an integer that
/// is no variant.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed by value from C unchecked",
    label = "C may pass a value that is not a valid `{Self}`",
    note = "derive `callgate::CValue` for a `#[repr(C)]` struct whose fields take every bit \
            pattern, `callgate::CEnum` for a fieldless enum, or take the integer (or a raw \
            pointer) and convert it in the body"
)]
pub trait CArg: Sized {
    /// The C parameter: every value C may pass is a valid one.
    type Raw: CValue;

    /// `Self` from what C passed to the argument `name`, or the failure
    /// that names it and the value.
    fn from_c(raw: Self::Raw, name: &'static str) -> Result<Self, Failure>;

    /// True when every `Raw` value converts (a [`CValue`], its own `Raw`):
    /// the values behind a pointer from C need no check.
    #[doc(hidden)]
    const TAKES_EVERY_VALUE: bool = false;
}

#[diagnostic::do_not_recommend]
impl<T: CValue> CArg for T {
    type Raw = T;

    const TAKES_EVERY_VALUE: bool = true;

    #[hot_path]
    fn from_c(raw: T, _name: &'static str) -> Result<T, Failure> {
        Ok(raw)
    }
}

/// The failure of a `#[derive(CEnum)]` conversion: the argument `name` of
/// enum type `ty` is `raw`, which is none of the `valid` discriminants.
#[cold]
#[inline(never)]
pub fn not_a_variant<R: Display>(
    name: &'static str,
    ty: &'static str,
    raw: R,
    valid: &[R],
) -> Failure {
    /// Longer lists are summed up by their length.
    const LISTED: usize = 8;
    let expected = match valid {
        [] => "it has no variants".to_owned(),
        [only] => format!("expected {only}"),
        [init @ .., last] if valid.len() <= LISTED => {
            let init: Vec<String> = init.iter().map(ToString::to_string).collect();
            format!("expected {} or {last}", init.join(", "))
        }
        _ => format!("expected one of its {} values", valid.len()),
    };
    Failure::new(format!(
        "argument `{name}` is {raw}, which is not a `{ty}` ({expected})"
    ))
}

/// The values of type `T` behind a pointer from C, for the check that they
/// are valid `T`s before the body reads them: C may store any bits of the
/// C type there, as it may pass any by value. A call `(&Stored::<T>::new())
/// .check(…)` checks each value with `T`'s [`CArg`] conversion where `T`
/// has one ([`CheckedStored`]: a `#[derive(CEnum)]` enum is checked, a
/// [`CValue`] takes every value), and does nothing for other types
/// ([`UncheckedStored`]: the opaque Rust types C hands back; the macro
/// rejects the others whose values C may get wrong by name).
#[doc(hidden)]
pub struct Stored<T>(PhantomData<T>);

impl<T> Stored<T> {
    #[doc(hidden)]
    #[hot_path]
    #[must_use]
    pub const fn new() -> Self {
        Stored(PhantomData)
    }
}

/// [`Stored::check`] for the types with a [`CArg`] conversion.
#[doc(hidden)]
pub trait CheckedStored<T> {
    /// Checks the `len` values at `first`, a C array the trampoline
    /// already checked (non-null unless empty, aligned, readable); a
    /// failure names the argument `name` and, for an array of more than
    /// one, the index.
    ///
    /// # Safety
    ///
    /// `first` is valid for reads of `len` values of `T`'s size and
    /// alignment for the call.
    unsafe fn check(&self, first: *const T, len: usize, name: &'static str) -> Result<(), Failure>;
}

impl<T: CArg> CheckedStored<T> for Stored<T> {
    #[hot_path]
    unsafe fn check(&self, first: *const T, len: usize, name: &'static str) -> Result<(), Failure> {
        const {
            assert!(
                size_of::<T::Raw>() == size_of::<T>() && align_of::<T::Raw>() <= align_of::<T>(),
                "a type whose `CArg::Raw` differs from it in size cannot be behind a pointer \
                 from C; take a pointer to the `Raw` type and convert each value"
            );
        }
        if T::TAKES_EVERY_VALUE {
            return Ok(());
        }
        for index in 0..len {
            // SAFETY: `first` is valid for `len` reads of `T`'s size and
            // alignment (caller obligation), which `T::Raw` shares (the
            // assertion above; a smaller alignment divides `T`'s), and every
            // bit pattern is a valid `T::Raw` (a `CValue`).
            let raw = unsafe { first.cast::<T::Raw>().add(index).read() };
            if let Err(failure) = T::from_c(raw, name) {
                return Err(stored_failure(failure, index, len));
            }
        }
        Ok(())
    }
}

/// [`Stored::check`] for the types without a [`CArg`] conversion: nothing
/// to check.
#[doc(hidden)]
pub trait UncheckedStored<T> {
    /// Checks nothing.
    ///
    /// # Safety
    ///
    /// As [`CheckedStored::check`], which the call site cannot tell this
    /// from.
    unsafe fn check(&self, first: *const T, len: usize, name: &'static str) -> Result<(), Failure>;
}

impl<T> UncheckedStored<T> for &Stored<T> {
    #[hot_path]
    unsafe fn check(&self, _: *const T, _: usize, _: &'static str) -> Result<(), Failure> {
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn stored_failure(failure: Failure, index: usize, len: usize) -> Failure {
    let message = failure.into_message();
    Failure::new(if len == 1 {
        format!("{message}, behind the pointer C passed")
    } else {
        format!("{message}, at index {index} of the array C passed")
    })
}

/// Fails to compile unless a `#[repr(C)]` enum, which C passes as an `int`,
/// has the size of `c_int`.
pub const fn check_c_enum_size(size: usize) {
    assert!(
        size == size_of::<c_int>(),
        "a `#[repr(C)]` enum with `#[derive(CEnum)]` must have the size of C's `int`; \
         give it an integer repr such as `#[repr(i64)]`"
    );
}

#[cfg(test)]
mod tests;
