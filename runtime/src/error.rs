//! The per-thread last error that C reads after a callback failed.
//!
//! It lives in its own thread-local rather than in the thread's context: an
//! `attach = per_call` callback hands its context back before C gets to read
//! the message. Like `errno`, it is set by a failing call and not cleared by
//! a successful one.

use core::cell::RefCell;
use core::ffi::{c_char, c_int};

thread_local! {
    static LAST_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The calling thread's last error message, if any.
///
/// Set when a callback on this thread returned its fallback value (an `Err`,
/// a panic, a NULL or invalid argument, a failed init); never cleared by a
/// successful call. Returns `None` during thread teardown, once the
/// thread's storage is gone.
pub fn last_error() -> Option<String> {
    LAST_ERROR
        .try_with(|slot| slot.borrow().clone())
        .ok()
        .flatten()
}

/// Sets the calling thread's last error message.
///
/// Ignored during thread teardown, once the thread's storage is gone.
pub fn set_last_error(message: impl Into<String>) {
    let message = message.into();
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = Some(message));
}

/// Clears the calling thread's last error message.
pub fn clear_last_error() {
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = None);
}

/// Bytes needed for the last error including its NUL, or 0 if there is none.
#[doc(hidden)]
pub fn last_error_length() -> usize {
    LAST_ERROR
        .try_with(|slot| {
            slot.borrow()
                .as_ref()
                .map_or(0, |message| message.len() + 1)
        })
        .unwrap_or(0)
}

/// Copies the last error into `buf` like `snprintf`: at most `len - 1`
/// bytes and a NUL. Returns the full message length (without the NUL), or
/// -1 if there is no last error or `buf` is NULL while `len > 0`.
///
/// # Safety
///
/// `buf` must be NULL or valid for writing `len` bytes.
#[doc(hidden)]
pub unsafe fn last_error_message(buf: *mut c_char, len: usize) -> c_int {
    LAST_ERROR
        .try_with(|slot| {
            let slot = slot.borrow();
            let Some(message) = slot.as_ref() else {
                return -1;
            };
            if len > 0 {
                if buf.is_null() {
                    return -1;
                }
                let copied = message.len().min(len - 1);
                // SAFETY: `buf` is valid for `len` bytes (caller obligation) and
                // `copied + 1 <= len`; the message is a separate allocation.
                unsafe {
                    core::ptr::copy_nonoverlapping(message.as_ptr().cast::<c_char>(), buf, copied);
                    *buf.add(copied) = 0;
                }
            }
            c_int::try_from(message.len()).unwrap_or(c_int::MAX)
        })
        .unwrap_or(-1)
}

/// Emits the last-error API for C into the calling crate, with its own
/// symbol prefix so two callgate libraries can share a process:
///
/// ```c
/// size_t prefix_last_error_length(void);            /* bytes incl. NUL, 0 if none */
/// int    prefix_last_error_message(char *buf, size_t len); /* like snprintf; -1 if none */
/// void   prefix_clear_last_error(void);
/// ```
///
/// ```
/// callgate::export_error_api!(mylib);
/// ```
#[macro_export]
macro_rules! export_error_api {
    ($prefix:ident) => {
        const _: () = {
            /// Bytes needed for the calling thread's last error, including
            /// the NUL; 0 if there is none.
            #[unsafe(export_name = concat!(stringify!($prefix), "_last_error_length"))]
            pub extern "C" fn last_error_length() -> usize {
                $crate::__private::last_error_length()
            }

            /// Copies the last error into `buf` like `snprintf`; returns the
            /// message length, or -1 if there is none.
            ///
            /// # Safety
            ///
            /// `buf` must be NULL or valid for writing `len` bytes.
            #[unsafe(export_name = concat!(stringify!($prefix), "_last_error_message"))]
            pub unsafe extern "C" fn last_error_message(
                buf: *mut ::core::ffi::c_char,
                len: usize,
            ) -> ::core::ffi::c_int {
                // SAFETY: forwarded caller obligation.
                unsafe { $crate::__private::last_error_message(buf, len) }
            }

            /// Clears the calling thread's last error.
            #[unsafe(export_name = concat!(stringify!($prefix), "_clear_last_error"))]
            pub extern "C" fn clear_last_error() {
                $crate::clear_last_error()
            }
        };
    };
}
