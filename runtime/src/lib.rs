//! callgate lets C call Rust safely and fast.
//!
//! One attribute, [`#[c_callback]`](c_callback), turns a plain Rust `fn` into
//! an `extern "C"` trampoline that C can call — as an exported symbol of a
//! `cdylib`/`staticlib`, or as a function pointer handed to a C API (`qsort`,
//! a thread pool, an event loop, an audio driver). Every call through it:
//!
//! 1. **passes the init gate**: a callback that arrives before the library's
//!    [`#[callgate::init]`](macro@init) code has finished waits for it; once it
//!    has, the check is one atomic load;
//! 2. **attaches the calling thread** to a per-thread context on its first
//!    call and keeps it bound until the thread exits, so every later call
//!    costs one thread-local load — threads created by C included;
//! 3. **stops panics, `Err`s and bad pointers at the boundary**: C gets the
//!    value the author declared plus a per-thread [last error](last_error());
//!    nothing unwinds into C, and a NULL where Rust wants a reference is an
//!    error, never undefined behaviour.
//!
//! ```
//! use callgate::c_callback;
//!
//! /// C: `int32_t parse_number(const char *text, double *out);`
//! #[c_callback(on_error = -1)]
//! fn parse_number(text: &str, out: &mut f64) -> Result<i32, std::num::ParseFloatError> {
//!     *out = text.trim().parse()?;
//!     Ok(0)
//! }
//!
//! // C reads the last error with `numbers_last_error_message(buf, len)`.
//! callgate::export_error_api!(numbers);
//! # fn main() {
//! # let mut out = 0.0;
//! # // SAFETY: a C string and a valid `double *`, as C would pass them.
//! # let status = unsafe { parse_number(c"2.5".as_ptr(), &mut out) };
//! # assert_eq!((status, out), (0, 2.5));
//! # // SAFETY: as above.
//! # let status = unsafe { parse_number(c"abc".as_ptr(), &mut out) };
//! # assert_eq!(status, -1);
//! # assert_eq!(callgate::last_error().as_deref(), Some("invalid float literal"));
//! # // SAFETY: NULL is allowed: the boundary turns it into an error.
//! # let status = unsafe { parse_number(std::ptr::null(), &mut out) };
//! # assert_eq!(status, -1);
//! # assert_eq!(callgate::last_error().as_deref(), Some("argument `text` is NULL"));
//! # }
//! ```
//!
//! C gets `-1` for text that is no number, for invalid UTF-8 and for a NULL
//! `text` or `out`, and the thread's last error says which.
//!
//! # Quick start
//!
//! 1. Make the crate a C library and depend on callgate. It is not on
//!    crates.io yet: take it from git, or from a clone by path (`callgate =
//!    "0.1"` once it is published):
//!
//!    ```toml
//!    [lib]
//!    crate-type = ["cdylib"]   # or "staticlib"
//!
//!    [dependencies]
//!    callgate = { git = "https://github.com/callgate-rs/callgate" }
//!    ```
//!
//! 2. Write `#[c_callback]` functions, as above.
//! 3. Build the C library and its header in one command: `cargo callgate
//!    build` (from `cargo install callgate-header`) writes `name.h` and a
//!    pkg-config file beside `libname.so`; `cargo callgate install
//!    --prefix DIR` installs them. The header is read from what the
//!    attribute and the derives recorded in the library, so it matches
//!    what was compiled ([headers]). `callgate-header
//!    target/debug/libname.so -o name.h` writes the header alone.
//! 4. Compile the C program against the header and link the library.
//!
//! The [tutorial] does this step by step, from `cargo new --lib` to a
//! running C program.
//!
//! # What C sees
//!
//! | you write | C gets |
//! |---|---|
//! | `#[c_callback] fn name(…)` | an exported function `name` (another name with `export = "…"`) |
//! | `#[c_callback(local)] fn name(…)` | no symbol: `name` is an `extern "C" fn` value to pass as a function pointer |
//! | [`#[callgate::init]`](macro@init) `fn setup()` | nothing to call: it runs when the library is loaded, and callbacks wait for it |
//! | [`export_error_api!(prefix)`](export_error_api) | `prefix_last_error_length`, `prefix_last_error_message` and `prefix_clear_last_error` |
//! | [`export_free!(name: CString)`](export_free) | `void name(char *value)`: frees what callbacks with `free = name` return |
//! | [`export_table! { static name: Type { cb, … } }`](export_table) | `extern const Type name`: a struct of the `local` callbacks' function pointers |
//! | [`UserData::new(state).into_raw()`](UserData) | a `void *` to hand a C API, with [`UserData::<T>::destroy`](UserData::destroy) as its destroy callback |
//! | [`Closure::new(fallback, \|x: c_int\| …)`](Closure) | a function pointer, its `void *` data and a `free` function |
//!
//! Parameters map to C types as [`c_callback`] describes: `&T` is checked
//! for NULL and alignment, `&CStr` for NULL, `&str` also for UTF-8, a slice
//! `&[T]` is a pointer and a length (`(NULL, 0)` is empty), an
//! [`OutBuf`] is a buffer C lends for `snprintf`-style output, and a
//! `#[local]` parameter is per-thread state of a [`Local`] type that is not
//! part of the C signature. A value passed by value is an integer, a float,
//! `bool`, a raw pointer, `Option<NonZero*>`, `Option<NonNull<T>>`, a
//! nullable `extern "C" fn` or a [`#[derive(CValue)]`](derive@CValue)
//! struct, all of which take every value C can pass; a fieldless
//! [`#[derive(CEnum)]`](derive@CEnum) enum arrives as its integer and is
//! checked against its variants, and any other type is a compile error. A callback may return an owned `CString`,
//! `Box<T>` or `Vec<T>`, which C frees with the library's free function.
//! The trampoline is an `unsafe extern "C" fn` when it takes a reference,
//! a string, a slice or a buffer (C must pass NULL or a valid pointer), a
//! safe one otherwise.
//!
//! # The guide
//!
//! The [guide] explains each feature with tested examples:
//!
//! | topic | page |
//! |---|---|
//! | options of the attribute, compile errors | [The attribute](https://github.com/callgate-rs/callgate/blob/main/guide/src/attribute.md) |
//! | slices, strings, buffers, owned results, enums and structs | [Data across the boundary](https://github.com/callgate-rs/callgate/blob/main/guide/src/data.md) |
//! | `on_error`, `on_panic`, the last error | [Errors](https://github.com/callgate-rs/callgate/blob/main/guide/src/errors.md) |
//! | C threads, `#[local]` state, `attach = per_call`, `CALLGATE`, [`stats()`] (binds, releases, panics, errors and gate waits; not calls) | [Threads](https://github.com/callgate-rs/callgate/blob/main/guide/src/threads.md) |
//! | `#[user_data]`, [`UserData`], [`Closure`], [`OnceClosure`], [`export_table!`] | [`void *` APIs](https://github.com/callgate-rs/callgate/blob/main/guide/src/void-pointers.md) |
//! | [`#[callgate::init]`](macro@init) and the gate | [Initialisation](https://github.com/callgate-rs/callgate/blob/main/guide/src/init.md) |
//! | `dlopen`, `dlclose`, many copies | [Plugins](https://github.com/callgate-rs/callgate/blob/main/guide/src/plugins.md) |
//! | Linux, musl, aarch64, Windows, others | [Platforms](https://github.com/callgate-rs/callgate/blob/main/guide/src/platforms.md) |
//! | what is guaranteed, and what is not | [Guarantees](https://github.com/callgate-rs/callgate/blob/main/guide/src/safety/guarantees.md), [Known limits](https://github.com/callgate-rs/callgate/blob/main/guide/src/safety/limits.md) |
//! | what a call costs | [Performance](https://github.com/callgate-rs/callgate/blob/main/guide/src/performance/figures.md) |
//!
//! # What the boundary cannot catch
//!
//! - A panic in a crate built with `panic = "abort"`: it aborts the process
//!   before anything can catch it.
//! - A pointer that is non-NULL and aligned but dangling, or points to less
//!   than its type: C must pass NULL or a valid pointer, which is why such
//!   trampolines are `unsafe extern "C" fn`.
//! - C calling through a prototype that does not match the function.
//! - Failures that are not panics: a stack overflow, an `abort`, a fault in
//!   the body's own `unsafe` code.
//! - State a panicking body left half-updated: nothing is rolled back, and a
//!   `Mutex` it held is poisoned for the next call.
//!
//! [guide]: https://github.com/callgate-rs/callgate/blob/main/guide/src/SUMMARY.md
//! [tutorial]: https://github.com/callgate-rs/callgate/blob/main/guide/src/getting-started.md
//! [headers]: https://github.com/callgate-rs/callgate/blob/main/guide/src/headers.md

#![cfg_attr(not(callgate_loom), deny(missing_docs))]
// Under loom only the lock-free core and the foundations it needs are
// compiled, for their models.
#![cfg_attr(callgate_loom, allow(dead_code))]

/// `#[hot_path]` marks the call path's functions: forced inline, but not in
/// a `dev` build (the one rule, in `callgate_macros::hot_path`).
#[macro_use]
extern crate callgate_macros;

/// Defines the hidden assembly function `$name`, which runs `$body` (a
/// call) on a stack aligned to 16 bytes, for callers that cannot promise
/// the ABI's alignment, with unwind information for each step. The
/// argument registers pass through; `$operand`s are `global_asm!`'s.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(callgate_loom)))]
macro_rules! aligned_call_function {
    ($name:literal, [$($body:literal),+ $(,)?] $(, $($operand:tt)+)?) => {
        core::arch::global_asm!(
            concat!(".pushsection .text.", $name, ",\"ax\",@progbits"),
            ".p2align 4",
            concat!(".globl ", $name),
            concat!(".hidden ", $name),
            concat!(".type ", $name, ",@function"),
            concat!($name, ":"),
            ".cfi_startproc",
            "push rbp",
            ".cfi_def_cfa_offset 16",
            ".cfi_offset rbp, -16",
            "mov rbp, rsp",
            ".cfi_def_cfa_register rbp",
            "and rsp, -16",
            $($body,)+
            "mov rsp, rbp",
            ".cfi_def_cfa_register rsp",
            "pop rbp",
            ".cfi_def_cfa_offset 8",
            "ret",
            ".cfi_endproc",
            concat!(".size ", $name, ", . - ", $name),
            ".popsection",
            $($($operand)+)?
        );
    };
}

// Everything but the lock-free core at the bottom, which is all a loom build
// (`--cfg callgate_loom`) compiles, for its models.
cfg_if::cfg_if! {
    if #[cfg(not(callgate_loom))] {
        // Entry points: what generated code, tools and programs call.
        #[doc(hidden)]
        #[path = "private.rs"]
        pub mod __private;
        pub mod closure;
        pub mod env;
        mod record;
        mod table;

        // The boundary: one call from C, and its arguments.
        mod args;
        mod boundary;
        mod out_buf;
        mod owned;
        mod slice;
        mod user_data;
        mod value;

        // What a call uses: the init gate, the last error, the statistics.
        mod init;
        mod last_error;
        mod stats;

        // Thread binding: attach, leave, release.
        mod thread;

        // Platform: the hooks C calls (thread exit, fork, dlopen pin), the TLS slot.
        mod hooks;
        mod tls;

        // State: per-thread contexts and their `#[local]` values; the settings.
        mod context;
        mod local;
        mod messages;
        mod settings;

        // Foundations: the leaves every layer may use.
        mod failure;
        mod stack;
    }
}

// Foundations: the lock-free core, with its loom models, and the leaves it
// uses.
mod diag;
mod freelist;
mod gate;
mod hint;
#[cfg(all(callgate_loom, test))]
mod loom_models;
mod sync;
mod valgrind;

/// Lets C pass a fieldless enum by value, as the integer of its `repr`,
/// checked at every call.
///
/// For an enum whose variants have no fields, with `#[repr(i32)]` (any
/// integer type up to 64 bits) or `#[repr(C)]` (C's `int`), a
/// `#[c_callback]` parameter of the enum's type becomes that integer in
/// the C signature. The trampoline converts it before the body runs: a
/// value equal to a variant's discriminant is that variant; any other
/// returns the callback's `on_error` fallback, with a last error naming
/// the argument, the value and the valid values: ``argument `mode` is 7,
/// which is not a `Mode` (expected 0, 1 or 4)``. Explicit, implicit and
/// negative discriminants all work.
///
/// `callgate-header` defines the type in the library's header as the
/// integer, with one constant per variant: `typedef int32_t Mode;` and
/// `enum { MODE_READ = 0, MODE_WRITE = 4 };` (`#[callgate(prefix =
/// "...")]` on the enum and `#[callgate(rename = "...")]` on a variant
/// choose the names; `#[callgate(skip_header)]` leaves the type to the
/// header's prelude). Not a C `enum`, whose size the C compiler chooses.
///
/// Enums with fields, without a `repr` or generic are compile errors that
/// say what to write instead; for a struct, derive
/// [`CValue`](derive@CValue). A crate that reaches callgate through a
/// re-export names that path with `#[callgate(crate = path)]` on the enum,
/// as `#[c_callback(crate = path)]` does.
///
/// ```
/// use callgate::{CEnum, c_callback};
///
/// #[derive(CEnum)]
/// #[repr(u8)]
/// pub enum Level {
///     Low = 1,
///     High = 200,
/// }
///
/// #[c_callback(on_error = -1)]
/// pub fn doc_level(level: Level) -> i32 {
///     level as i32
/// }
///
/// # fn main() {
/// // C passes a `uint8_t`.
/// assert_eq!(doc_level(200), 200);
/// assert_eq!(doc_level(2), -1);
/// assert_eq!(
///     callgate::last_error().as_deref(),
///     Some("argument `level` is 2, which is not a `Level` (expected 1 or 200)")
/// );
/// # }
/// ```
#[cfg(not(callgate_loom))]
pub use callgate_macros::CEnum;
/// Implements [`CValue`](trait@CValue) for a `#[repr(C)]` or
/// `#[repr(transparent)]` struct whose fields are all `CValue`s, so a
/// `#[c_callback]` or a [`Closure`] may take it by value.
///
/// Each field's type must be a `CValue`; one that is not (a `char`, an
/// enum, a reference) is a compile error at that field. The struct must
/// also be `Copy`. Enums (derive [`CEnum`](derive@CEnum)), unions and
/// structs without a C layout are compile errors that say what to write
/// instead. `#[callgate(crate = path)]` on the struct names callgate
/// through a re-export.
///
/// Fields may be arrays of `CValue`s. `callgate-header` defines the struct
/// in the library's header, field for field; a struct C cannot describe
/// (generic, `packed`, `align`, only `PhantomData`) is a compile error
/// unless `#[callgate(skip_header)]` leaves it to the header's prelude.
///
/// ```
/// use callgate::{CValue, c_callback};
///
/// #[derive(Clone, Copy, CValue)]
/// #[repr(C)]
/// pub struct Point {
///     pub x: f64,
///     pub y: f64,
/// }
///
/// #[c_callback(on_error = 0.0)]
/// pub fn doc_length(point: Point) -> f64 {
///     point.x.hypot(point.y)
/// }
///
/// # fn main() {
/// assert_eq!(doc_length(Point { x: 3.0, y: 4.0 }), 5.0);
/// # }
/// ```
#[cfg(not(callgate_loom))]
pub use callgate_macros::CValue;
#[cfg(not(callgate_loom))]
#[doc = include_str!("../doc/c_callback.md")]
#[doc = include_str!("../doc/c_callback/parameters.md")]
pub use callgate_macros::c_callback;
#[cfg(not(callgate_loom))]
#[doc = include_str!("../doc/init.md")]
pub use callgate_macros::init;
#[cfg(not(callgate_loom))]
pub use closure::{Closure, OnceClosure};
pub use gate::InitState;
#[cfg(not(callgate_loom))]
pub use init::init_state;
#[cfg(not(callgate_loom))]
pub use last_error::{clear_last_error, last_error, set_last_error};
#[cfg(not(callgate_loom))]
pub use local::Local;
#[cfg(not(callgate_loom))]
pub use out_buf::OutBuf;
#[cfg(not(callgate_loom))]
pub use settings::{AttachMode, PanicMode, Settings};
#[cfg(not(callgate_loom))]
pub use stats::{Stats, stats};
#[cfg(not(callgate_loom))]
pub use user_data::UserData;
#[cfg(not(callgate_loom))]
pub use value::CValue;

// The traits whose compile errors name them at the user's code, reachable
// here so that rustc prints `CArg` rather than `callgate::__private::CArg`.
// Not public API.
#[cfg(not(callgate_loom))]
#[doc(hidden)]
pub use user_data::{ExclusiveUserData, SharedUserData};
#[cfg(not(callgate_loom))]
#[doc(hidden)]
pub use value::CArg;

/// The runtime settings in force.
///
/// They come from the `CALLGATE` environment variable, a comma-separated
/// list of `key=value` pairs read once, on first use (a thread's first
/// callback, or this call), like Go's `GODEBUG`:
///
/// | key | values | effect on every callback of the process |
/// |---|---|---|
/// | `attach` | `bound` (default), `per_call` | `per_call`: attach and release the thread around every outermost call, as `attach = per_call` does |
/// | `panic` | `catch` (default), `quiet`, `abort` | `quiet`: a panic inside a callback is caught as with `catch`, and Rust's panic message (and backtrace) is not printed on standard error; `abort`: a panic aborts the process with its message, as `on_panic = abort` does |
///
/// For example `CALLGATE=attach=per_call,panic=abort`. This never fails:
/// unknown keys and values are ignored, and the first malformed value of
/// the process is reported on standard error. A change to `CALLGATE` after
/// the first read is seen only when made through [`env`](mod@env).
#[cfg(not(callgate_loom))]
pub fn settings() -> Settings {
    settings::current()
}
