//! The counters of a context that `stats()` reads.

use crate::sync::{AtomicU64, Ordering};

/// A per-thread counter: written only by the context's owner, so a plain
/// load and store; read by `stats()` from any thread.
pub(crate) struct Counter(AtomicU64);

impl Counter {
    pub(super) const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    #[hot_path]
    pub(crate) fn bump(&self) -> u64 {
        // Relaxed: one writer, so load and store lose nothing; readers need
        // only atomicity.
        let before = self.0.load(Ordering::Relaxed);
        self.0.store(before.wrapping_add(1), Ordering::Relaxed);
        before
    }

    #[inline]
    pub(crate) fn get(&self) -> u64 {
        // Relaxed: a statistic for other threads; the owner (or a `fork`
        // child's only thread) reads its own last store.
        self.0.load(Ordering::Relaxed)
    }
}
