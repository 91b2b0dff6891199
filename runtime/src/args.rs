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

#[hot_path]
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
#[hot_path]
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
#[hot_path]
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
#[hot_path]
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
#[hot_path]
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
#[hot_path]
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
#[hot_path]
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
#[hot_path]
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
#[hot_path]
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

/// The memory one pointer argument covers, as C passed it, for
/// [`check_disjoint`]: `len` bytes from `start` (none for NULL), and
/// whether the body may write them.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Region {
    start: usize,
    len: usize,
    writable: bool,
    name: &'static str,
}

impl Region {
    /// The `count` values of `T` from `first` (a pointer, a slice or an
    /// `OutBuf` argument, or user data of type `T`), by address only: nothing
    /// is read.
    #[hot_path]
    #[must_use]
    pub fn values<T>(first: *const T, count: usize, writable: bool, name: &'static str) -> Self {
        Region {
            start: first.addr(),
            // NULL, or more bytes than a slice may span, covers nothing
            // here: the argument's conversion fails on it with its own
            // message.
            len: count
                .checked_mul(size_of::<T>())
                .filter(|&len| !first.is_null() && len <= isize::MAX as usize)
                .unwrap_or(0),
            writable,
            name,
        }
    }

    /// A C string argument, with its NUL (none for NULL).
    ///
    /// # Safety
    ///
    /// A non-null `text` points to a NUL-terminated string, as the
    /// trampoline's contract says.
    #[hot_path]
    #[must_use]
    pub unsafe fn c_string(text: *const c_char, name: &'static str) -> Self {
        let len = if text.is_null() {
            0
        } else {
            // SAFETY: non-null, NUL-terminated (caller obligation).
            unsafe { CStr::from_ptr(text) }.count_bytes() + 1
        };
        Region {
            start: text.addr(),
            len,
            writable: false,
            name,
        }
    }

    fn overlaps(&self, other: &Region) -> bool {
        self.len != 0
            && other.len != 0
            && self.start < other.start.saturating_add(other.len)
            && other.start < self.start.saturating_add(self.len)
    }
}

/// Fails if two of the arguments' `regions` overlap and the body may write
/// one of them: the references the body takes would alias a `&mut` (C
/// calling `f(buf, buf)` for `f(src: &[u8], dst: &mut [u8])`), undefined
/// behaviour in Rust. Checked before any argument is converted.
#[inline]
pub fn check_disjoint(regions: &[Region]) -> Result<(), Failure> {
    for (index, first) in regions.iter().enumerate() {
        for second in &regions[index + 1..] {
            if (first.writable || second.writable) && first.overlaps(second) {
                return Err(overlap(first, second));
            }
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn overlap(first: &Region, second: &Region) -> Failure {
    let written = if second.writable {
        second.name
    } else {
        first.name
    };
    Failure::new(format!(
        "arguments `{}` and `{}` overlap, and the callback writes `{written}`: pass separate \
         memory (a callback that works in place takes one `&mut` argument, or raw pointers)",
        first.name, second.name
    ))
}

#[cfg(test)]
mod tests;
