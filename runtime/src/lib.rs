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
//! // C reads the last error with `numbers_last_error_message(buf, len)`.
//! callgate::export_error_api!(numbers);
//!
//! # fn main() {
//! // What a C caller sees:
//! let mut out = 0.0;
//! // SAFETY: a C string and a valid `double *`, as C would pass them.
//! let status = unsafe { parse_number(c"2.5".as_ptr(), &mut out) };
//! assert_eq!((status, out), (0, 2.5));
//!
//! // SAFETY: as above.
//! let status = unsafe { parse_number(c"abc".as_ptr(), &mut out) };
//! assert_eq!(status, -1);
//! assert_eq!(callgate::last_error().as_deref(), Some("not a number"));
//!
//! // SAFETY: NULL is allowed: the boundary turns it into an error.
//! let status = unsafe { parse_number(std::ptr::null(), &mut out) };
//! assert_eq!(status, -1);
//! assert_eq!(callgate::last_error().as_deref(), Some("argument `text` is NULL"));
//! # }
//! ```
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
//! # C APIs that take a `void *`
//!
//! A `#[user_data] state: &State` parameter is the `void *` a C API passes
//! back to its callback (`qsort_r`, `pthread_create`, SQLite's `pApp`,
//! glib's `user_data`), typed and checked for NULL. [`UserData`] hands
//! Rust state to such an API together with the destroy function it calls
//! when done, so the state is dropped exactly once. [`Closure`] and
//! [`OnceClosure`] turn Rust closures into (function, data, free) for
//! `register(callback, data[, free])` APIs, with every call going through
//! the same boundary as a `#[c_callback]`. [`export_table!`] exports the
//! pointers of `local` callbacks as one struct a C host reads.
//!
//! # Threads
//!
//! A thread is bound to a runtime context on its first call and stays bound
//! until it exits; its context, with its [`Local`] values, then goes back to
//! a free list for the next new thread. Threads C created (`pthread_create`,
//! an OpenMP team, a driver's callback thread) need no setup. With
//! `attach = per_call` a callback releases the context when its outermost
//! call returns, for threads that call once; the thread keeps the released
//! context aside for its next per-call call, until it exits. On Windows a fiber-local
//! storage callback releases the context when the thread exits; on
//! targets with neither pthread keys nor Windows' FLS every call works the
//! per-call way, and so does every call in a process that had no pthread
//! key (FLS index) left for the runtime, which says so once on standard
//! error.
//!
//! # Calls that never return
//!
//! C code called from a callback may end the call early: `longjmp` back to
//! the host (libpng's error handling), `pthread_exit`, a cancellation, a
//! C++ exception caught further out. The runtime notices such abandoned
//! calls and recovers: every call writes a token into its own frame and
//! records where; the next call, finding calls still recorded as running,
//! drops those it can prove gone (their frame lies at or below its own on
//! the thread's stack, or their token was overwritten) and frees the
//! [`Local`] values they held. A call that returns restores the depth it
//! started at, and the thread's exit hook, which runs when none of its
//! frames remain, releases the context whatever was left recorded. A
//! forced unwind or a foreign exception that reaches one of the
//! trampoline's landing pads (debug builds keep them) cannot be caught:
//! it aborts the process with a message naming the callback.
//!
//! # Settings and statistics
//!
//! The `CALLGATE` environment variable, read once, changes the defaults of
//! the whole process, like Go's `GODEBUG`: `CALLGATE=attach=per_call`,
//! `CALLGATE=panic=abort` (see [`settings()`]); [`env`](mod@env) keeps the
//! settings in sync when a program rewrites its environment. [`stats()`]
//! reports what the runtime did: binds, calls, panics caught, errors
//! returned, gate waits.
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
//! # Module map
//!
//! The runtime is built in layers, listed here top to bottom, and the `mod`
//! declarations below are grouped the same way. A module uses modules of
//! the layers below its own, and of its own layer without a cycle:
//!
//! 1. **Entry points**: `__private`, the one door generated code goes
//!    through; `env`, environment writes that keep the settings in sync;
//!    `closure`, Rust closures C calls through the boundary; `table`, the
//!    `export_table!` macro.
//! 2. **The boundary**: `boundary`, one call from C (gate, attach, body
//!    under `catch_unwind`, fallback); `args`, C pointers to references;
//!    `slice`, (pointer, length) pairs to slices; `out_buf`, caller
//!    buffers; `owned`, results C frees through exported free functions;
//!    `user_data`, the `void *` C APIs pass back; `value`, values passed by
//!    value, and the check of those C may pass invalid.
//! 3. **What a call uses**: `init`, load-time initialisation and its gate;
//!    `last_error`, the per-thread message C reads; `stats`, the counters.
//! 4. **Thread binding**: `thread`, attaching a thread to a context and
//!    releasing it.
//! 5. **Platform**: `hooks`, what C calls into the runtime (the pthread key
//!    destructor, the `fork` child handler, Windows' FLS callback) and their
//!    registration; `tls`,
//!    the thread's current-context slot, per target.
//! 6. **State**: `context`, the pooled per-thread contexts; `local`, their
//!    `#[local]` values; `messages`, the last-error messages the threads
//!    hold, for the unload to free; `settings`, the process-wide
//!    `CALLGATE` settings.
//! 7. **Foundations**: `freelist` and `gate`, the lock-free core the loom
//!    models check; `failure`, a failure's message; `diag`, reporting and
//!    aborting; `stack`, telling which recorded calls still have frames;
//!    `sync`, the atomics loom swaps in, the closures' turns and the
//!    hazard words; `valgrind`, helgrind annotations.
//!
//! The only calls that point up are the hooks C invokes, from outside every
//! callback: `hooks` → `thread` (release a context at thread exit, reclaim
//! the contexts of a `fork` child, free the pool at unload), `hooks` →
//! `last_error` (free the message at thread exit), `hooks` → `init`
//! (fail an init that `fork` left behind) and `hooks` → `closure` (end the
//! hold of a `Closure::concurrent` call its exiting thread, or a thread
//! the `fork` child lacks, abandoned). `scripts/module-map.sh` checks this.

#![cfg_attr(not(callgate_loom), deny(missing_docs))]
#![deny(unsafe_op_in_unsafe_fn)]
// Under loom only the lock-free core and the foundations it needs are
// compiled, for their models.
#![cfg_attr(callgate_loom, allow(dead_code))]

/// Defines the hidden assembly function `$name` that makes one call on a
/// stack aligned to 16 bytes, for callers that cannot promise the ABI's
/// alignment (the TLS descriptor's call from `asm!` blocks, a key
/// destructor started on a misaligned stack): it saves `rbp`, rounds the
/// stack pointer down, runs `$body` (which makes the call), and restores
/// the stack, with unwind information for each step. The argument
/// registers pass through untouched; `$operand`s are `global_asm!`'s.
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

// Entry points: what generated code, tools and programs call.
#[cfg(not(callgate_loom))]
#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
#[cfg(not(callgate_loom))]
pub mod closure;
#[cfg(not(callgate_loom))]
pub mod env;
#[cfg(not(callgate_loom))]
mod table;

// The boundary: one call from C, and its arguments.
#[cfg(not(callgate_loom))]
mod args;
#[cfg(not(callgate_loom))]
mod boundary;
#[cfg(not(callgate_loom))]
mod out_buf;
#[cfg(not(callgate_loom))]
mod owned;
#[cfg(not(callgate_loom))]
mod slice;
#[cfg(not(callgate_loom))]
mod user_data;
#[cfg(not(callgate_loom))]
mod value;

// What a call uses: the init gate, the last error, the statistics.
#[cfg(not(callgate_loom))]
mod init;
#[cfg(not(callgate_loom))]
mod last_error;
#[cfg(not(callgate_loom))]
mod stats;

// Thread binding: attach, leave, release.
#[cfg(not(callgate_loom))]
mod thread;

// Platform: the hooks C calls (thread exit, fork, dlopen pin), the TLS slot.
#[cfg(not(callgate_loom))]
mod hooks;
#[cfg(not(callgate_loom))]
mod tls;

// State: per-thread contexts and their `#[local]` values; the settings.
#[cfg(not(callgate_loom))]
mod context;
#[cfg(not(callgate_loom))]
mod local;
#[cfg(not(callgate_loom))]
mod messages;
#[cfg(not(callgate_loom))]
mod settings;

// Foundations: the lock-free core (with its loom models) and the leaves
// every layer may use.
mod diag;
#[cfg(not(callgate_loom))]
mod failure;
mod freelist;
mod gate;
mod hint;
#[cfg(all(callgate_loom, test))]
mod loom_models;
#[cfg(not(callgate_loom))]
mod stack;
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
/// negative discriminants all work. Declare the type in C as the integer
/// (`typedef int32_t Mode;`), not as a C `enum`, whose size the C compiler
/// chooses.
///
/// Enums with fields, without a `repr` or generic are compile errors that
/// say what to write instead; for a struct, derive
/// [`CValue`](derive@CValue).
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
/// instead.
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
pub use callgate_macros::c_callback;
#[cfg(not(callgate_loom))]
#[doc = include_str!("../doc/init.md")]
pub use callgate_macros::init;
#[cfg(not(callgate_loom))]
pub use closure::{Closure, OnceClosure};
pub use gate::{GatePolicy, InitState};
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

/// The runtime settings in force.
///
/// They come from the `CALLGATE` environment variable, a comma-separated
/// list of `key=value` pairs read once, on first use (a thread's first
/// callback, or this call), like Go's `GODEBUG`:
///
/// | key | values | effect on every callback of the process |
/// |---|---|---|
/// | `attach` | `bound` (default), `per_call` | `per_call`: attach and release the thread around every outermost call, as `attach = per_call` does |
/// | `panic` | `catch` (default), `abort` | `abort`: a panic aborts the process with its message, as `on_panic = abort` does |
///
/// For example `CALLGATE=attach=per_call,panic=abort`. This never fails:
/// unknown keys and values are ignored, and the first malformed value of
/// the process is reported on standard error. A change to `CALLGATE` after
/// the first read is seen only when made through [`env`](mod@env).
#[cfg(not(callgate_loom))]
pub fn settings() -> Settings {
    settings::current()
}
