//! The per-thread last error that C reads after a callback failed.
//!
//! Its own thread-local rather than in the thread's context: a per-call
//! callback hands its context back before C reads the message. Like
//! `errno`, a failing call sets it and a successful one leaves it.
//!
//! The thread-local is a bare pointer without a destructor, so it works at
//! any point of thread teardown; the runtime's key destructor frees the
//! message (setting one arms it). Messages are also linked into
//! [`messages`], so unloading the library frees those of threads that
//! outlive it.

use core::cell::Cell;
use core::ffi::{c_char, c_int};

use crate::messages::{self, Message};

thread_local! {
    static LAST_ERROR: Cell<*mut Message> = const { Cell::new(core::ptr::null_mut()) };
}

fn with_message<R>(f: impl FnOnce(Option<&str>) -> R) -> R {
    let message = LAST_ERROR.with(Cell::get);
    if message.is_null() {
        return f(None);
    }
    // SAFETY: a live message owned by this thread's slot, freed only by
    // `discard` (or at unload), which `f` does not reach.
    f(Some(unsafe { &*message }.text()))
}

fn replace(message: Option<String>) {
    discard();
    let Some(message) = message else { return };
    // The fork handlers guard the message list's lock.
    crate::hooks::handle_fork();
    LAST_ERROR.with(|slot| slot.set(messages::insert(message)));
    crate::hooks::arm_exit_hook();
}

/// Frees the calling thread's message (replaced, or the thread exits).
pub(crate) fn discard() {
    let old = LAST_ERROR.with(|slot| slot.replace(core::ptr::null_mut()));
    if !old.is_null() {
        // SAFETY: the slot owned `old`, from `messages::insert`, and no longer
        // refers to it.
        unsafe { messages::free(old) };
    }
}

/// True when the calling thread has a message (for its exit hook).
#[cfg(windows)]
pub(crate) fn is_set() -> bool {
    !LAST_ERROR.with(Cell::get).is_null()
}

/// The calling thread's last error message, if any.
///
/// Set when a callback on this thread returned its fallback value (an `Err`,
/// a panic, a NULL or invalid argument, a failed init); never cleared by a
/// successful call.
pub fn last_error() -> Option<String> {
    with_message(|message| message.map(str::to_owned))
}

/// Sets the calling thread's last error message.
pub fn set_last_error(message: impl Into<String>) {
    replace(Some(message.into()));
}

/// Clears the calling thread's last error message.
pub fn clear_last_error() {
    replace(None);
}

/// Bytes needed for the last error including its NUL, or 0 if there is none.
#[doc(hidden)]
pub fn last_error_length() -> usize {
    with_message(|message| message.map_or(0, |message| message.len() + 1))
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
    with_message(|message| {
        let Some(message) = message else { return -1 };
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
}

/// Emits the last-error API for C into the calling crate, with its own
/// symbol prefix so two callgate libraries can share a process, and records
/// its declarations for [`callgate-header`](https://docs.rs/callgate-header)
/// to write into the library's C header:
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

            // The C declarations of the three functions, derived from
            // these signatures (checked against the fns above), recorded
            // for `callgate-header`.
            $crate::__private::declarations! {
                crate = $crate, prefix = $prefix;

                /// Bytes needed for the calling thread's last error message, including
                /// its NUL; 0 if there is none.
                fn last_error_length() -> usize;

                /// Copies the calling thread's last error message into `buf` like
                /// `snprintf`: at most `len - 1` bytes and a NUL. Returns the message's
                /// full length (without the NUL), or -1 if there is no last error or
                /// `buf` is NULL while `len > 0`. `buf` must be NULL or valid for
                /// writing `len` bytes.
                unsafe fn last_error_message(
                    buf: *mut ::core::ffi::c_char,
                    len: usize,
                ) -> ::core::ffi::c_int;

                /// Clears the calling thread's last error message.
                fn clear_last_error();
            }
        };
    };
}
