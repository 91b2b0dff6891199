//! callgate lets C call Rust safely and fast.
//!
//! One attribute, [`#[c_callback]`](c_callback), turns a plain Rust `fn` into
//! an `extern "C"` trampoline that C can call — as an exported symbol of a
//! `cdylib`/`staticlib`, or as a function pointer handed to a C API. Every
//! call through it:
//!
//! 1. **passes the init gate**: a callback that arrives before the library's
//!    [`#[callgate::init]`](init) code has finished waits for it; once it
//!    has, the check is one atomic load;
//! 2. **attaches the calling thread** to a per-thread context on its first
//!    call and keeps it bound until the thread exits, so every later call
//!    costs one thread-local load — threads created by C included;
//! 3. **stops panics, `Err`s and bad pointers at the boundary**: C gets the
//!    value the author declared plus a per-thread [last error](last_error);
//!    nothing unwinds into C, and a NULL where Rust wants a reference is an
//!    error, never undefined behaviour.
//!
//! ```
//! use callgate::c_callback;
//! use std::ffi::CStr;
//!
//! #[derive(Debug)]
//! struct NotANumber;
//!
//! impl std::fmt::Display for NotANumber {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         f.write_str("not a number")
//!     }
//! }
//!
//! /// C: `int32_t parse_number(const char *text, double *out);`
//! #[c_callback(on_error = -1)]
//! fn parse_number(text: &CStr, out: &mut f64) -> Result<i32, NotANumber> {
//!     let text = text.to_str().map_err(|_| NotANumber)?;
//!     *out = text.trim().parse().map_err(|_| NotANumber)?;
//!     Ok(0)
//! }
//!
//! callgate::export_error_api!(numbers);
//!
//! # fn main() {
//! // What a C caller sees:
//! let mut out = 0.0;
//! let status = unsafe { parse_number(c"2.5".as_ptr(), &mut out) };
//! assert_eq!((status, out), (0, 2.5));
//!
//! let status = unsafe { parse_number(c"abc".as_ptr(), &mut out) };
//! assert_eq!(status, -1);
//! assert_eq!(callgate::last_error().as_deref(), Some("not a number"));
//!
//! let status = unsafe { parse_number(std::ptr::null(), &mut out) };
//! assert_eq!(status, -1);
//! assert_eq!(callgate::last_error().as_deref(), Some("argument `text` is NULL"));
//! # }
//! ```
//!
//! Settings come from the `CALLGATE` environment variable (see
//! [`settings()`]); [`stats()`] reports what the runtime did; [`env`](mod@env) keeps
//! those settings in sync when a program rewrites its environment.
#![cfg_attr(not(callgate_loom), deny(missing_docs))]
#![deny(unsafe_op_in_unsafe_fn)]
// Under loom only the gate and the free list are compiled, for their models.
#![cfg_attr(callgate_loom, allow(dead_code))]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(not(callgate_loom))]
mod args;
#[cfg(not(callgate_loom))]
mod boundary;
#[cfg(not(callgate_loom))]
mod context;
#[cfg(not(callgate_loom))]
pub mod env;
#[cfg(not(callgate_loom))]
mod error;
mod freelist;
mod gate;
#[cfg(not(callgate_loom))]
mod init;
#[cfg(not(callgate_loom))]
mod local;
#[cfg(all(callgate_loom, test))]
mod loom_models;
#[cfg(not(callgate_loom))]
mod settings;
#[cfg(not(callgate_loom))]
mod stats;
mod sync;
#[cfg(not(callgate_loom))]
mod thread;

#[cfg(not(callgate_loom))]
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

#[cfg(not(callgate_loom))]
#[doc = include_str!("../doc/c_callback.md")]
pub use callgate_macros::c_callback;
#[cfg(not(callgate_loom))]
#[doc = include_str!("../doc/init.md")]
pub use callgate_macros::init;
#[cfg(not(callgate_loom))]
pub use error::{clear_last_error, last_error, set_last_error};
pub use gate::{GatePolicy, InitState};
#[cfg(not(callgate_loom))]
pub use init::init_state;
#[cfg(not(callgate_loom))]
pub use local::Local;
#[cfg(not(callgate_loom))]
pub use settings::{AttachMode, PanicMode, Settings};
#[cfg(not(callgate_loom))]
pub use stats::{Stats, stats};

/// The runtime settings in force (from the `CALLGATE` environment
/// variable, read on first use; see the crate docs).
#[cfg(not(callgate_loom))]
pub fn settings() -> Settings {
    settings::current()
}

/// Writes `message` to standard error and aborts the process.
#[cold]
#[inline(never)]
pub(crate) fn abort_with(message: &str) -> ! {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{message}");
    std::process::abort()
}
