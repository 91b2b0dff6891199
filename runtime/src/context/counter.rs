//! The counters of a context that `stats()` reads.

use crate::sync::{AtomicU64, Ordering};

/// A per-thread counter: written only by the context's owner, so a plain
/// load and store; read by `stats()` from any thread.
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(super) const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    /// Counts one more; returns the count before.
    #[hot_path]
    pub(crate) fn bump(&self) -> u64 {
        // Relaxed: a statistic with a single writer (the owning thread), so
        // load + store cannot lose an update; readers only need atomicity.
        let before = self.0.load(Ordering::Relaxed);
        self.0.store(before.wrapping_add(1), Ordering::Relaxed);
        before
    }

    /// The count so far.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        // Relaxed: another thread reads a statistic, which needs only
        // atomicity; the owner, or the only thread of a `fork` child
        // (`Context::reset_orphan`), reads the last store.
        self.0.load(Ordering::Relaxed)
    }
}
