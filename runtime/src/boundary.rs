//! The boundary: what every generated trampoline runs, one call from C.
//!
//! A call takes one of three ways:
//!
//! 1. [`straight`]: [`call`] reaches the thread's slot, which stands for
//!    the open init gate, and runs the body inline, with no frame, on the
//!    context bound to the thread, or the one its last per-call call
//!    cached (`thread::take_cached`, `thread::release_cached`).
//! 2. [`slow`]: everything else, out of line from one place (`call_cold`):
//!    a thread's first call (`bind_first`), the slot in dynamic TLS, and
//!    `call_slow` (the gate, `thread::attach`, a nested or abandoned call,
//!    `thread::leave`).
//! 3. [`outcome`]: the body under `catch_unwind`, and an `Err` or a panic
//!    turned into the fallback plus the last error.
//!
//! [`site`]: what a trampoline hands in ([`Site`]) and its body gets
//! ([`Frame`]). The call path is generic and `#[hot_path]` (forced inline,
//! but not in a `dev` build); what runs only when something goes wrong is
//! `#[cold]`.

mod outcome;
mod site;
mod slow;
mod straight;

pub(crate) use outcome::quiet_panics_if_asked;
pub use outcome::{from_result, ok};
pub use site::{Frame, OnFailure, Site};
pub(crate) use site::{marked_call_is_gone, thread_mark};
pub(crate) use slow::{bound_context, bound_node};
pub(crate) use straight::{align_to_fetch_line, call_from, call_from_at, fast_slot};
pub use straight::{call, call_local};
