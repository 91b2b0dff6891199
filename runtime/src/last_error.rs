//! The per-thread last error that C reads after a callback failed.
//!
//! It lives in its own thread-local rather than in the thread's context: an
//! `attach = per_call` callback hands its context back before C gets to read
//! the message. Like `errno`, it is set by a failing call and not cleared by
//! a successful one.
//!
//! The thread-local is a bare pointer without a destructor, so the message
//! can be set and read at any point of thread teardown — including from
//! pthread key destructors, after Rust's own thread-local destructors ran
//! (a `thread_local!` with a destructor would register a new one then,
//! which glibc never runs: a leak per thread). The message is freed by the
//! runtime's pthread key destructor, which setting a message arms for
//! threads that are not bound.

use core::cell::{Cell, UnsafeCell};
use core::ffi::{c_char, c_int};

/// Bytes kept of a message set while the thread is exiting.
const EXIT_MESSAGE_CAPACITY: usize = 256;

thread_local! {
    /// A `Box<String>` from `Box::into_raw`, or null.
    static LAST_ERROR: Cell<*mut String> = const { Cell::new(core::ptr::null_mut()) };
    /// Where messages go once the runtime's key destructor has run on this
    /// thread: no hook is left that could free a heap message then, so it
    /// is kept inline (truncated to `EXIT_MESSAGE_CAPACITY` bytes).
    static EXIT_MESSAGE: ExitMessage = const {
        ExitMessage { bytes: UnsafeCell::new([0; EXIT_MESSAGE_CAPACITY]), len: Cell::new(None) }
    };
}

struct ExitMessage {
    bytes: UnsafeCell<[u8; EXIT_MESSAGE_CAPACITY]>,
    /// The length of the UTF-8 message in `bytes`, or `None`.
    len: Cell<Option<usize>>,
}

/// Runs `f` on the calling thread's message.
fn with_message<R>(f: impl FnOnce(Option<&str>) -> R) -> R {
    let message = LAST_ERROR.with(Cell::get);
    if !message.is_null() {
        // SAFETY: a non-null pointer is a live box owned by this thread's
        // slot; it is freed only by `replace`/`discard`, which no code
        // inside `f` reaches.
        return f(Some(unsafe { &*message }));
    }
    EXIT_MESSAGE.with(|exit| match exit.len.get() {
        None => f(None),
        Some(len) => {
            // SAFETY: only this thread touches its buffer, and it is written
            // only by `replace`, which no code inside `f` reaches.
            let bytes = unsafe { &(&*exit.bytes.get())[..len] };
            // `replace` stores whole UTF-8 characters only.
            f(core::str::from_utf8(bytes).ok())
        }
    })
}

/// Replaces the calling thread's message, freeing the old one.
fn replace(message: Option<String>) {
    discard();
    let Some(message) = message else { return };
    if crate::thread::exiting() {
        EXIT_MESSAGE.with(|exit| {
            let mut len = message.len().min(EXIT_MESSAGE_CAPACITY);
            while !message.is_char_boundary(len) {
                len -= 1;
            }
            // SAFETY: only this thread touches its buffer, and no reference
            // into it is alive (`with_message` does not call `replace`).
            unsafe { (&mut *exit.bytes.get())[..len].copy_from_slice(&message.as_bytes()[..len]) };
            exit.len.set(Some(len));
        });
        return;
    }
    LAST_ERROR.with(|slot| slot.set(Box::into_raw(Box::new(message))));
    crate::hooks::arm_exit_hook();
}

/// Frees the calling thread's message: it is being replaced, or the thread
/// is exiting (the runtime's key destructor).
pub(crate) fn discard() {
    let old = LAST_ERROR.with(|slot| slot.replace(core::ptr::null_mut()));
    if !old.is_null() {
        // SAFETY: the slot owned `old`, a pointer from `Box::into_raw`, and
        // no longer refers to it.
        drop(unsafe { Box::from_raw(old) });
    }
    EXIT_MESSAGE.with(|exit| exit.len.set(None));
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
