//! Process-wide statistics of this copy of the runtime.
//!
//! Hot counters (calls, panics, errors) live in each context and are summed
//! here; cold ones (binds, releases, gate waits) are global atomics touched
//! only on slow paths.

use crate::context::CONTEXTS;
use crate::sync::{AtomicU64, Ordering};

static BINDS: AtomicU64 = AtomicU64::new(0);
static RELEASES: AtomicU64 = AtomicU64::new(0);
static GATE_WAITS: AtomicU64 = AtomicU64::new(0);
static ERRORS_OUTSIDE_CALLS: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the runtime's counters; see [`stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Contexts ever created (never freed; reused through the free list).
    pub contexts_created: u64,
    /// Contexts attached to a thread right now.
    pub contexts_bound: u64,
    /// Contexts waiting on the free list.
    pub contexts_free: u64,
    /// Attachments of a thread to a context (first calls, per-call attaches).
    pub binds: u64,
    /// Releases of a context (thread exits, per-call returns).
    pub releases: u64,
    /// Calls that passed the init gate, whatever their outcome: a rejected
    /// argument, an `Err` and a panic count too. Calls the gate turned away
    /// count only in `errors_returned`.
    pub calls: u64,
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
pub fn stats() -> Stats {
    let mut stats = Stats {
        contexts_created: CONTEXTS.allocated() as u64,
        contexts_free: CONTEXTS.free() as u64,
        // Relaxed: statistics.
        binds: BINDS.load(Ordering::Relaxed),
        releases: RELEASES.load(Ordering::Relaxed),
        gate_waits: GATE_WAITS.load(Ordering::Relaxed),
        errors_returned: ERRORS_OUTSIDE_CALLS.load(Ordering::Relaxed),
        ..Stats::default()
    };
    stats.contexts_bound = stats.binds.saturating_sub(stats.releases);
    for node in CONTEXTS.iter() {
        stats.calls += node.value.calls.get();
        stats.panics_caught += node.value.panics.get();
        stats.errors_returned += node.value.errors.get();
    }
    stats
}

pub(crate) fn record_bind() {
    // Relaxed: a statistic.
    BINDS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn record_release() {
    // Relaxed: a statistic.
    RELEASES.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn record_gate_wait() {
    // Relaxed: a statistic.
    GATE_WAITS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn record_error_outside_call() {
    // Relaxed: a statistic.
    ERRORS_OUTSIDE_CALLS.fetch_add(1, Ordering::Relaxed);
}
