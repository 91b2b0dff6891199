//! Slices from C's `(pointer, length)` pairs, for generated trampolines.
//!
//! `slice::from_raw_parts` wants a non-null, aligned pointer even for an
//! empty slice, and a length whose byte size fits in `isize`; C passes
//! `(NULL, 0)` for "nothing" all the time, and any length at all by mistake.
//! The checks here make every pair either a valid slice or a failure that
//! names the argument:
//!
//! | pointer | length | result |
//! |---|---|---|
//! | NULL | 0 | an empty slice (`None` for an `Option`) |
//! | NULL | > 0 | failure: "argument `data` is NULL but its length is 5" |
//! | misaligned for `T` | any | failure: "argument `data` is not aligned to 8 bytes" |
//! | aligned | byte size > `isize::MAX`, or past the end of the address space | failure: "argument `data` is too long …" |
//! | aligned | fits | the slice (C promises the memory is valid) |

use core::ffi::c_char;
use core::fmt::Display;
use core::ptr::NonNull;

use crate::failure::Failure;

#[cold]
#[inline(never)]
fn null_with_length(name: &'static str, len: usize) -> Failure {
    Failure::new(format!("argument `{name}` is NULL but its length is {len}"))
}

#[cold]
#[inline(never)]
fn misaligned(name: &'static str, align: usize) -> Failure {
    Failure::new(format!("argument `{name}` is not aligned to {align} bytes"))
}

#[cold]
#[inline(never)]
fn too_long(name: &'static str, len: usize, size: usize) -> Failure {
    Failure::new(format!(
        "argument `{name}` is too long: {len} elements of {size} bytes do not fit in the \
         address space"
    ))
}

#[cold]
#[inline(never)]
fn bad_length(name: &'static str, len: &dyn Display) -> Failure {
    Failure::new(format!("argument `{name}` is not a valid length: {len}"))
}

#[cold]
#[inline(never)]
fn not_utf8(name: &'static str, error: core::str::Utf8Error) -> Failure {
    Failure::new(format!(
        "argument `{name}` is not valid UTF-8 (invalid byte at offset {})",
        error.valid_up_to()
    ))
}

/// The pointer to build a `len`-element slice from: `p` itself, or a
/// dangling one for `(NULL, 0)`; a failure for anything else that
/// `slice::from_raw_parts` would not accept.
#[hot_path]
pub(crate) fn checked_start<T>(
    p: *const T,
    len: usize,
    name: &'static str,
) -> Result<NonNull<T>, Failure> {
    let Some(start) = NonNull::new(p.cast_mut()) else {
        if len == 0 {
            return Ok(NonNull::dangling());
        }
        return Err(null_with_length(name, len));
    };
    if !p.is_aligned() {
        return Err(misaligned(name, align_of::<T>()));
    }
    // At most `isize::MAX` bytes, and the last one must not pass the end of
    // the address space. A zero-sized `T` fits any length.
    let size = size_of::<T>();
    let fits = len
        .checked_mul(size)
        .is_some_and(|bytes| bytes <= isize::MAX as usize && p.addr().checked_add(bytes).is_some());
    if !fits {
        return Err(too_long(name, len, size));
    }
    Ok(start)
}

/// `&[T]` from a `const T *` and a length.
///
/// # Safety
///
/// When `p` is non-null, aligned and `len` elements fit in memory, `p` must
/// point to `len` initialised `T`s that nothing mutates for `'a`.
#[hot_path]
pub unsafe fn slice_arg<'a, T>(
    p: *const T,
    len: usize,
    name: &'static str,
) -> Result<&'a [T], Failure> {
    let start = checked_start(p, len, name)?;
    // SAFETY: non-null, aligned, `len * size_of::<T>() <= isize::MAX` and
    // not wrapping (checked, or dangling for length 0); the elements are
    // valid and unchanged for 'a (caller obligation).
    Ok(unsafe { core::slice::from_raw_parts(start.as_ptr(), len) })
}

/// `&mut [T]` from a `T *` and a length.
///
/// # Safety
///
/// As [`slice_arg`], and nothing else accesses the elements for `'a`.
#[hot_path]
pub unsafe fn mut_slice_arg<'a, T>(
    p: *mut T,
    len: usize,
    name: &'static str,
) -> Result<&'a mut [T], Failure> {
    let start = checked_start(p, len, name)?;
    // SAFETY: as in `slice_arg`; exclusive for 'a (caller obligation).
    Ok(unsafe { core::slice::from_raw_parts_mut(start.as_ptr(), len) })
}

/// `Option<&[T]>` from a nullable `const T *` and a length: `(NULL, 0)` is
/// `None`; NULL with a non-zero length is still a failure.
///
/// # Safety
///
/// As [`slice_arg`].
#[hot_path]
pub unsafe fn opt_slice_arg<'a, T>(
    p: *const T,
    len: usize,
    name: &'static str,
) -> Result<Option<&'a [T]>, Failure> {
    if p.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded caller obligation.
    unsafe { slice_arg(p, len, name) }.map(Some)
}

/// `Option<&mut [T]>` from a nullable `T *` and a length, as
/// [`opt_slice_arg`].
///
/// # Safety
///
/// As [`mut_slice_arg`].
#[hot_path]
pub unsafe fn opt_mut_slice_arg<'a, T>(
    p: *mut T,
    len: usize,
    name: &'static str,
) -> Result<Option<&'a mut [T]>, Failure> {
    if p.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded caller obligation.
    unsafe { mut_slice_arg(p, len, name) }.map(Some)
}

/// `&str` from a `const char *` and a length in bytes, checked for UTF-8.
/// The bytes need no NUL and may contain NULs.
///
/// # Safety
///
/// As [`slice_arg`] for `len` bytes.
#[hot_path]
pub unsafe fn str_len_arg<'a>(
    p: *const c_char,
    len: usize,
    name: &'static str,
) -> Result<&'a str, Failure> {
    // SAFETY: forwarded caller obligation (`c_char` and `u8` have one layout).
    let bytes = unsafe { slice_arg(p.cast::<u8>(), len, name) }?;
    core::str::from_utf8(bytes).map_err(|error| not_utf8(name, error))
}

/// `Option<&str>` from a nullable `const char *` and a length, as
/// [`opt_slice_arg`].
///
/// # Safety
///
/// As [`str_len_arg`].
#[hot_path]
pub unsafe fn opt_str_len_arg<'a>(
    p: *const c_char,
    len: usize,
    name: &'static str,
) -> Result<Option<&'a str>, Failure> {
    if p.is_null() && len == 0 {
        return Ok(None);
    }
    // SAFETY: forwarded caller obligation.
    unsafe { str_len_arg(p, len, name) }.map(Some)
}

/// The `usize` length held by the integer parameter `name` that a
/// `#[len = name]` attribute points at; a negative value (or one that does
/// not fit in `usize`) is a failure naming the parameter.
#[hot_path]
pub fn len_arg<L>(len: L, name: &'static str) -> Result<usize, Failure>
where
    L: TryInto<usize> + Copy + Display,
{
    len.try_into().map_err(|_| bad_length(name, &len))
}

#[cfg(test)]
mod tests;
