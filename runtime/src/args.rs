//! Argument conversion for generated trampolines: C pointers to Rust
//! references, with NULL, alignment and UTF-8 checks that name the argument.

use core::ffi::{CStr, c_char};

use crate::failure::Failure;

#[cold]
#[inline(never)]
fn null(name: &'static str) -> Failure {
    Failure::new(format!("argument `{name}` is NULL"))
}

#[cold]
#[inline(never)]
fn misaligned(name: &'static str, align: usize) -> Failure {
    Failure::new(format!("argument `{name}` is not aligned to {align} bytes"))
}

#[inline(always)]
fn check<T>(p: *const T, name: &'static str) -> Result<(), Failure> {
    if p.is_null() {
        return Err(null(name));
    }
    if !p.is_aligned() {
        return Err(misaligned(name, align_of::<T>()));
    }
    Ok(())
}

/// `&T` from a `const T *`.
///
/// # Safety
///
/// A non-null, aligned `p` must point to a valid `T` that nothing mutates for `'a`.
#[inline(always)]
pub unsafe fn ref_arg<'a, T>(p: *const T, name: &'static str) -> Result<&'a T, Failure> {
    check(p, name)?;
    // SAFETY: non-null and aligned (checked); valid for 'a (caller obligation).
    Ok(unsafe { &*p })
}

/// `&mut T` from a `T *`.
///
/// # Safety
///
/// A non-null, aligned `p` must point to a valid `T` that nothing else
/// accesses for `'a`.
#[inline(always)]
pub unsafe fn mut_arg<'a, T>(p: *mut T, name: &'static str) -> Result<&'a mut T, Failure> {
    check(p, name)?;
    // SAFETY: non-null and aligned (checked); exclusive for 'a (caller obligation).
    Ok(unsafe { &mut *p })
}

/// `Option<&T>` from a nullable `const T *`.
///
/// # Safety
///
/// As [`ref_arg`] when `p` is non-null.
#[inline(always)]
pub unsafe fn opt_ref_arg<'a, T>(
    p: *const T,
    name: &'static str,
) -> Result<Option<&'a T>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded caller obligation.
    unsafe { ref_arg(p, name) }.map(Some)
}

/// `Option<&mut T>` from a nullable `T *`.
///
/// # Safety
///
/// As [`mut_arg`] when `p` is non-null.
#[inline(always)]
pub unsafe fn opt_mut_arg<'a, T>(
    p: *mut T,
    name: &'static str,
) -> Result<Option<&'a mut T>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded caller obligation.
    unsafe { mut_arg(p, name) }.map(Some)
}

/// `&CStr` from a `const char *`.
///
/// # Safety
///
/// A non-null `p` must point to a NUL-terminated string that stays
/// unchanged for `'a`.
#[inline(always)]
pub unsafe fn cstr_arg<'a>(p: *const c_char, name: &'static str) -> Result<&'a CStr, Failure> {
    if p.is_null() {
        return Err(null(name));
    }
    // SAFETY: non-null (checked); NUL-terminated and valid for 'a (caller obligation).
    Ok(unsafe { CStr::from_ptr(p) })
}

/// `Option<&CStr>` from a nullable `const char *`.
///
/// # Safety
///
/// As [`cstr_arg`] when `p` is non-null.
#[inline(always)]
pub unsafe fn opt_cstr_arg<'a>(
    p: *const c_char,
    name: &'static str,
) -> Result<Option<&'a CStr>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded caller obligation.
    unsafe { cstr_arg(p, name) }.map(Some)
}

/// `&str` from a `const char *` holding UTF-8.
///
/// # Safety
///
/// As [`cstr_arg`].
#[inline(always)]
pub unsafe fn str_arg<'a>(p: *const c_char, name: &'static str) -> Result<&'a str, Failure> {
    // SAFETY: forwarded caller obligation.
    let text = unsafe { cstr_arg(p, name) }?;
    text.to_str().map_err(|error| {
        Failure::new(format!(
            "argument `{name}` is not valid UTF-8 (invalid byte at offset {})",
            error.valid_up_to()
        ))
    })
}

/// `Option<&str>` from a nullable `const char *` holding UTF-8.
///
/// # Safety
///
/// As [`cstr_arg`] when `p` is non-null.
#[inline(always)]
pub unsafe fn opt_str_arg<'a>(
    p: *const c_char,
    name: &'static str,
) -> Result<Option<&'a str>, Failure> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded caller obligation.
    unsafe { str_arg(p, name) }.map(Some)
}
