//! Process-wide statistics of this copy of the runtime.
//!
//! Counters of what threads do (binds, releases, panics, errors)
//! live in each context, written only by its owner, and are summed here; the
//! rest (gate waits, errors before a context exists) are global atomics
//! touched only on slow paths.

use crate::context::CONTEXTS;
use crate::sync::{AtomicU64, Ordering};

static GATE_WAITS: AtomicU64 = AtomicU64::new(0);
static ERRORS_OUTSIDE_CALLS: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the runtime's counters; see [`stats`].
///
/// Calls are not counted: a count that every call increments is a
/// read-modify-write of memory that each call makes the next one wait for,
/// which costs more than the rest of a bound call's boundary on some CPUs
/// (see the guide's Performance pages). A callback that needs its calls
/// counted counts them itself (a `#[local]` counter costs no shared line).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Contexts ever created (reused through the free list; freed only when
    /// the library is unloaded).
    pub contexts_created: u64,
    /// Contexts attached to a thread right now.
    pub contexts_bound: u64,
    /// Contexts attached to no thread: on the free list, or kept aside by
    /// a thread for its next `attach = per_call` call (or, in a `fork`
    /// child, left by a thread of the parent that was inside a call, and
    /// never used again).
    pub contexts_free: u64,
    /// Attachments of a thread to a context (first calls, per-call attaches).
    pub binds: u64,
    /// Releases of a context (thread exits, per-call returns). A thread's
    /// release happens as it exits, which can be later than the host's
    /// "join": see [`stats`].
    pub releases: u64,
    /// Panics caught at the boundary.
    pub panics_caught: u64,
    /// Calls that returned their `on_error` value (`Err`, bad argument,
    /// failed or pending init).
    pub errors_returned: u64,
    /// Calls that had to wait at the init gate.
    pub gate_waits: u64,
}

/// A snapshot of the runtime's counters.
///
/// Each counter is read atomically, but the snapshot as a whole is not: taken
/// while other threads call in, the fields may be from slightly different
/// moments. Cost: proportional to the number of contexts.
///
/// # Releases lag behind a host's "join"
///
/// A bound thread's context is released by the thread itself, as it exits
/// (its pthread key destructor). A host that waits for its threads with
/// `pthread_join` sees the releases when the join returns; many do not:
/// CPython's `threading.Thread.join` returns once the thread's Python code
/// is done, before the OS thread has finished exiting; glib's thread pools
/// park their threads for reuse instead of ending them
/// (`g_thread_pool_free` returns with them still bound, until
/// `g_thread_pool_stop_unused_threads` or their idle timeout); detached
/// threads exit whenever they get there. After such a "join",
/// `releases` and `contexts_bound` catch up a little later, or only when
/// the host ends its parked threads: poll, with a deadline, rather than
/// reading once.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// /// Waits until every bound context was released, or `timeout` passed.
/// fn wait_until_released(timeout: Duration) -> bool {
///     let deadline = Instant::now() + timeout;
///     while callgate::stats().contexts_bound > 0 {
///         if Instant::now() > deadline {
///             return false;
///         }
///         std::thread::sleep(Duration::from_millis(1));
///     }
///     true
/// }
/// # assert!(wait_until_released(Duration::from_secs(10)));
/// ```
pub fn stats() -> Stats {
    let mut stats = Stats {
        contexts_created: CONTEXTS.allocated() as u64,
        // Relaxed: statistics.
        gate_waits: GATE_WAITS.load(Ordering::Relaxed),
        errors_returned: ERRORS_OUTSIDE_CALLS.load(Ordering::Relaxed),
        ..Stats::default()
    };
    for node in CONTEXTS.iter() {
        stats.binds += node.value.binds.get();
        stats.releases += node.value.releases.get();
        stats.panics_caught += node.value.panics.get();
        stats.errors_returned += node.value.errors.get();
    }
    stats.contexts_bound = stats.binds.saturating_sub(stats.releases);
    stats.contexts_free = stats.contexts_created.saturating_sub(stats.contexts_bound);
    stats
}

pub(crate) fn record_gate_wait() {
    // Relaxed: a statistic.
    GATE_WAITS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn record_error_outside_call() {
    // Relaxed: a statistic.
    ERRORS_OUTSIDE_CALLS.fetch_add(1, Ordering::Relaxed);
}
