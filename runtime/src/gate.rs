//! The init gate: callbacks that arrive before the library's
//! `#[callgate::init]` code has finished wait for it (or fail fast).
//!
//! The gate is one `AtomicU32`. Zero means *ready*, and that is the only
//! value the fast path looks for: one `Acquire` load and a compare, no lock,
//! no read-modify-write, no shared write. Any other value sends the caller to
//! the `#[cold]` slow path: the low 31 bits count the inits still running and
//! the top bit records that one of them failed. A crate without
//! `#[callgate::init]` never leaves zero, so it never waits.
//!
//! # Atomic orderings
//!
//! * `finish` decrements the pending count with `Release`; `is_ready` loads
//!   with `Acquire`. The pair makes everything the init code wrote visible to
//!   a callback that sees the gate open.
//! * `arm` publishes no data: it only has to be ordered before the init it
//!   announces runs, which program order on the arming thread gives, and
//!   callers that race with loading the library learn about the library
//!   only through the loader's own synchronisation. It is `SeqCst` for
//!   `init`, which closes the static-TLS fast path after it (see
//!   `init::open_fast_path`).
//! * In the slow path every state change and every check happens under
//!   `waiters`, so a waiter cannot miss the wake-up of the last `finish`.

use crate::sync::{AtomicBool, AtomicU32, Condvar, Mutex, Ordering, lock};

const FAILED: u32 = 1 << 31;

/// What a callback does when it finds the gate closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GatePolicy {
    /// Block until every init has finished (the default).
    Wait,
    /// Return the `on_error` value at once.
    Fail,
    /// Never look at the gate.
    Skip,
}

/// Why a callback could not pass the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Closed {
    /// An init failed with this message.
    Failed(String),
    /// The policy was [`GatePolicy::Fail`] and an init is still running.
    Pending,
}

/// Where the library's initialisation stands; see [`init_state`](crate::init_state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitState {
    /// At least one `#[callgate::init]` is still running.
    Pending,
    /// Every init finished successfully, or the library has none.
    Ready,
    /// An init returned `Err` or panicked; the message says which and why.
    Failed(String),
}

pub(crate) struct Gate {
    state: AtomicU32,
    /// The first failure's message; also the lock waiters sleep under.
    failure: Mutex<Option<String>>,
    wake: Condvar,
    /// Set in a `fork` child whose parent forked while an init ran on
    /// another thread: that init cannot finish here. Checked before taking
    /// `failure`, which a parent thread may have held at the fork.
    orphaned: AtomicBool,
}

/// The failure of a gate whose init was left behind by `fork`.
pub(crate) const ORPHANED: &str = "the process forked while initialisation was running on another thread; it cannot finish in the child";

impl Gate {
    #[cfg(not(callgate_loom))]
    pub(crate) const fn new() -> Gate {
        Gate {
            state: AtomicU32::new(0),
            failure: Mutex::new(None),
            wake: Condvar::new(),
            orphaned: AtomicBool::new(false),
        }
    }

    #[cfg(callgate_loom)]
    pub(crate) fn new() -> Gate {
        Gate {
            state: AtomicU32::new(0),
            failure: Mutex::new(None),
            wake: Condvar::new(),
            orphaned: AtomicBool::new(false),
        }
    }

    /// True when every init has finished successfully: the fast path.
    #[inline(always)]
    pub(crate) fn is_ready(&self) -> bool {
        // Acquire: pairs with the Release in `finish` (module docs).
        self.state.load(Ordering::Acquire) == 0
    }

    /// Announces an init that is about to run.
    pub(crate) fn arm(&self) {
        // SeqCst: it publishes no data (module docs), but `init` pairs it
        // with `is_ready_seqcst` around the static TLS offset.
        self.state.fetch_add(1, Ordering::SeqCst);
    }

    /// [`is_ready`](Gate::is_ready) in the single total order of `SeqCst`
    /// operations, for a check that must not move above a store before it.
    pub(crate) fn is_ready_seqcst(&self) -> bool {
        // SeqCst: see `init::open_fast_path`.
        self.state.load(Ordering::SeqCst) == 0
    }

    /// Records that an init finished, with its outcome, and wakes the
    /// waiters when it was the last one (or when it failed).
    pub(crate) fn finish(&self, outcome: Result<(), String>) {
        let mut failure = lock(&self.failure);
        if let Err(message) = outcome {
            failure.get_or_insert(message);
            // Release: pairs with the Acquire loads that read the state.
            self.state.fetch_or(FAILED, Ordering::Release);
        }
        // Release: pairs with the Acquire in `is_ready` (module docs).
        self.state.fetch_sub(1, Ordering::Release);
        drop(failure);
        self.wake.notify_all();
    }

    /// The slow path: waits for the inits, or reports why the gate stays shut.
    #[cold]
    #[inline(never)]
    pub(crate) fn pass_slow(
        &self,
        policy: GatePolicy,
        waited: impl FnOnce(),
    ) -> Result<(), Closed> {
        if self.is_orphaned() {
            return Err(Closed::Failed(ORPHANED.to_owned()));
        }
        let mut failure = lock(&self.failure);
        let mut waited = Some(waited);
        loop {
            // Acquire: pairs with the Release RMWs in `finish`.
            let state = self.state.load(Ordering::Acquire);
            if state == 0 {
                return Ok(());
            }
            if state & FAILED != 0 {
                return Err(Closed::Failed(failure.clone().unwrap_or_default()));
            }
            if policy == GatePolicy::Fail {
                return Err(Closed::Pending);
            }
            if let Some(count) = waited.take() {
                count();
            }
            failure = match self.wake.wait(failure) {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
    }

    /// In a `fork` child whose pending inits ran on threads that are gone:
    /// the gate fails from now on, without touching the lock. Only `fork`
    /// (unix) leaves an init behind.
    #[cfg_attr(any(callgate_loom, not(unix)), allow(dead_code))]
    pub(crate) fn orphan(&self) {
        if !self.is_ready() {
            // Release: pairs with the Acquire in `is_orphaned`.
            self.orphaned.store(true, Ordering::Release);
        }
    }

    fn is_orphaned(&self) -> bool {
        // Acquire: pairs with the Release in `orphan`.
        self.orphaned.load(Ordering::Acquire)
    }

    /// The state for [`crate::init_state`].
    pub(crate) fn state(&self) -> InitState {
        if self.is_orphaned() {
            return InitState::Failed(ORPHANED.to_owned());
        }
        let failure = lock(&self.failure);
        // Acquire: pairs with the Release RMWs in `finish`.
        let state = self.state.load(Ordering::Acquire);
        if state & FAILED != 0 {
            InitState::Failed(failure.clone().unwrap_or_default())
        } else if state == 0 {
            InitState::Ready
        } else {
            InitState::Pending
        }
    }
}
