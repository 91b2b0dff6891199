//! The boundary: what every generated trampoline runs, one call from C.
//!
//! A call takes one of three ways, read in this order:
//!
//! 1. [`straight`]: [`call`] reaches the thread's slot, which stands for
//!    the open init gate, and runs the body on the context it finds there:
//!    the context bound to the thread, or for `attach = per_call` the one
//!    its last call cached (`thread::take_cached`, then
//!    `thread::release_cached`). Inline in the trampoline, with no frame.
//! 2. [`slow`]: everything else, out of line and entered from one place
//!    (`call_cold`): a thread's first call (`bind_first`), the slot in
//!    dynamic TLS, and `call_slow` — the gate, an attach
//!    (`thread::attach`), a nested or abandoned call, the release after
//!    (`thread::leave`).
//! 3. [`outcome`]: the body under `catch_unwind`, and an `Err` or a panic
//!    turned into the declared fallback plus the thread's last error.
//!
//! [`site`] holds what a trampoline hands in: its static [`Site`], and the
//! [`Frame`] its body gets.
//!
//! The call path is generic and `#[hot_path]`, so each trampoline compiles
//! to its own fast path; what runs only when something goes wrong is
//! `#[cold]` and out of line.

mod outcome;
mod site;
mod slow;
mod straight;

pub use outcome::{from_result, ok};
pub(crate) use site::marked_call_is_gone;
pub use site::{Frame, OnFailure, Site};
pub(crate) use slow::bound_context;
pub use straight::{call, call_local};
