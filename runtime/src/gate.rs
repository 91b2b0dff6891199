//! The init gate: callbacks that arrive before the library's
//! `#[callgate::init]` code has finished wait for it (or fail fast).
//!
//! The gate is one `AtomicU32`. Zero means *ready*, the only value the fast
//! path looks for (one `Acquire` load). Any other value sends the caller to
//! the `#[cold]` slow path: the low 16 bits count the foreground inits still
//! to finish, the next 15 the background ones, and the top bit records that
//! one of them failed. The two counts are apart because a `fork` child
//! treats them apart ([`Gate::after_fork`]).
//!
//! # Atomic orderings
//!
//! * `finish` decrements the pending count with `Release`; `is_ready` loads
//!   with `Acquire`. The pair makes everything the init code wrote visible to
//!   a callback that sees the gate open.
//! * `arm` publishes no data: program order on the arming thread orders it
//!   before its init, and other callers learn of the library only through
//!   the loader's synchronisation. It is `SeqCst` for `init`, which closes
//!   the gate's fast-path word after it (see `init::open_fast_path`).
//! * A waiter reads the count of the gate's bell before the state, and
//!   sleeps only while the count is unchanged; `finish` rings after it
//!   changed the state, so a waiter cannot miss the last one ([`Bell`]).
//! * The first failure's message is published with `Release` before the
//!   `FAILED` bit, so a waiter that sees the bit with `Acquire` sees it.

use core::ptr;

use crate::sync::{AtomicBool, AtomicPtr, AtomicU32, Bell, Ordering};

const FAILED: u32 = 1 << 31;
const FOREGROUND: u32 = 1;
const BACKGROUND: u32 = 1 << 16;
const FOREGROUND_MASK: u32 = BACKGROUND - 1;
const BACKGROUND_MASK: u32 = !FAILED & !FOREGROUND_MASK;

/// Where an init runs: on the loading thread, or on a thread of its own
/// (`#[callgate::init(background)]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InitKind {
    Foreground,
    Background,
}

impl InitKind {
    pub(crate) fn of(background: bool) -> InitKind {
        if background {
            InitKind::Background
        } else {
            InitKind::Foreground
        }
    }

    fn unit(self) -> u32 {
        match self {
            InitKind::Foreground => FOREGROUND,
            InitKind::Background => BACKGROUND,
        }
    }

    fn mask(self) -> u32 {
        match self {
            InitKind::Foreground => FOREGROUND_MASK,
            InitKind::Background => BACKGROUND_MASK,
        }
    }

    fn pending(self, state: u32) -> u32 {
        (state & self.mask()) / self.unit()
    }
}

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
    /// The first failure's message, a leaked `Box<String>` set once (null
    /// before), freed at unload.
    failure: AtomicPtr<String>,
    /// Rung by every `finish`.
    bell: Bell,
    /// Set in a `fork` child whose pending init ran on a missing thread.
    orphaned: AtomicBool,
}

/// How long a call waits at the gate before it says so: far longer than
/// an init usually takes, short enough for whoever watches a hung process.
#[cfg(not(callgate_loom))]
pub(crate) const LONG_WAIT: core::time::Duration = core::time::Duration::from_secs(10);

/// The failure of a gate whose init was left behind by `fork`.
pub(crate) const ORPHANED: &str = "the process forked while initialisation was running on another thread; it cannot finish in the child";

impl Gate {
    #[cfg(not(callgate_loom))]
    pub(crate) const fn new() -> Gate {
        Gate {
            state: AtomicU32::new(0),
            failure: AtomicPtr::new(ptr::null_mut()),
            bell: Bell::new(),
            orphaned: AtomicBool::new(false),
        }
    }

    #[cfg(callgate_loom)]
    pub(crate) fn new() -> Gate {
        Gate {
            state: AtomicU32::new(0),
            failure: AtomicPtr::new(ptr::null_mut()),
            bell: Bell::new(),
            orphaned: AtomicBool::new(false),
        }
    }

    /// True when every init finished successfully: the fast path.
    #[hot_path]
    pub(crate) fn is_ready(&self) -> bool {
        // Acquire: pairs with the Release in `finish` (module docs).
        self.state.load(Ordering::Acquire) == 0
    }

    /// Announces an init about to run. Past 65 535 foreground or 32 767
    /// background inits the count carries into the next field: arming aborts.
    pub(crate) fn arm(&self, kind: InitKind) {
        // SeqCst: no data (module docs), but `init` pairs it with
        // `is_ready_seqcst` around the fast-path word.
        let before = self.state.fetch_add(kind.unit(), Ordering::SeqCst);
        if before & kind.mask() == kind.mask() {
            crate::diag::abort_with("callgate: too many inits pending at once; aborting");
        }
    }

    /// [`is_ready`](Gate::is_ready) in `SeqCst`'s total order, for a check
    /// that must not move above a store before it.
    pub(crate) fn is_ready_seqcst(&self) -> bool {
        // SeqCst: see `init::open_fast_path`.
        self.state.load(Ordering::SeqCst) == 0
    }

    /// Records that an init finished, and wakes the waiters.
    pub(crate) fn finish(&self, kind: InitKind, outcome: Result<(), String>) {
        if let Err(message) = outcome {
            let message = Box::into_raw(Box::new(message));
            // Release on success: publishes the message. Relaxed on failure: the
            // first message stays, this one is dropped.
            if let Err(_first) = self.failure.compare_exchange(
                ptr::null_mut(),
                message,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                // SAFETY: from `Box::into_raw` above, not stored.
                drop(unsafe { Box::from_raw(message) });
            }
            // Release: the message is stored before the bit (module docs).
            self.state.fetch_or(FAILED, Ordering::Release);
        }
        // Release: pairs with the Acquire in `is_ready` (module docs).
        self.state.fetch_sub(kind.unit(), Ordering::Release);
        self.bell.ring();
    }

    /// The first failure's message, once `FAILED` was read with `Acquire`.
    fn failure(&self) -> String {
        // Acquire: pairs with the Release in `finish`.
        let message = self.failure.load(Ordering::Acquire);
        if message.is_null() {
            String::new()
        } else {
            // SAFETY: a leaked `Box<String>`, never changed again, freed only at
            // unload.
            unsafe { &*message }.clone()
        }
    }

    /// Frees the first failure's message.
    ///
    /// # Safety
    ///
    /// No thread uses the gate again (unload).
    // Only the ELF unload hook (Linux, Android) frees it.
    #[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
    pub(crate) unsafe fn free_failure(&self) {
        // Relaxed: no other thread uses the gate (caller obligation).
        let message = self.failure.swap(ptr::null_mut(), Ordering::Relaxed);
        if !message.is_null() {
            // SAFETY: a leaked `Box<String>`, just taken out.
            drop(unsafe { Box::from_raw(message) });
        }
    }

    /// The slow path: waits for the inits, or says why the gate stays shut.
    /// `waited` runs as the call starts to wait, `waiting_long` after
    /// [`LONG_WAIT`].
    #[cold]
    #[inline(never)]
    pub(crate) fn pass_slow(
        &self,
        policy: GatePolicy,
        waited: impl FnOnce(),
        waiting_long: impl FnOnce(),
    ) -> Result<(), Closed> {
        if self.is_orphaned() {
            return Err(Closed::Failed(ORPHANED.to_owned()));
        }
        let mut waited = Some(waited);
        #[cfg(not(callgate_loom))]
        let mut waiting_long = Some((std::time::Instant::now(), waiting_long));
        #[cfg(callgate_loom)]
        drop(waiting_long);
        loop {
            // The bell's count before the state, so a `finish` this read misses
            // ends the wait below (see `Bell`).
            let seen = self.bell.rings();
            // Acquire: pairs with the Release RMWs in `finish`.
            let state = self.state.load(Ordering::Acquire);
            if state == 0 {
                return Ok(());
            }
            if state & FAILED != 0 {
                return Err(Closed::Failed(self.failure()));
            }
            if policy == GatePolicy::Fail {
                return Err(Closed::Pending);
            }
            if let Some(count) = waited.take() {
                count();
            }
            #[cfg(not(callgate_loom))]
            if let Some((since, report)) = waiting_long.take() {
                match LONG_WAIT.checked_sub(since.elapsed()) {
                    Some(left) if !left.is_zero() => {
                        waiting_long = Some((since, report));
                        self.bell.wait_timeout(seen, left);
                    }
                    _ => report(),
                }
                continue;
            }
            self.bell.wait(seen);
        }
    }

    /// In a `fork` child: fails the gate from now on if an init it waits
    /// for has no thread to finish it here. Only the forking thread goes on:
    /// the loading thread's foreground inits (`forked_by_loader`), or the
    /// background init it runs (`forked_in_background_init`).
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn after_fork(&self, forked_by_loader: bool, forked_in_background_init: bool) {
        // Relaxed: the child has one thread.
        let state = self.state.load(Ordering::Relaxed);
        let foreground = InitKind::Foreground.pending(state);
        let background = InitKind::Background.pending(state);
        let lost_foreground = if forked_by_loader { 0 } else { foreground };
        let lost_background = background - u32::from(forked_in_background_init && background > 0);
        if lost_foreground + lost_background > 0 {
            // Release: pairs with the Acquire in `is_orphaned`.
            self.orphaned.store(true, Ordering::Release);
        }
    }

    fn is_orphaned(&self) -> bool {
        // Acquire: pairs with the Release in `after_fork`.
        self.orphaned.load(Ordering::Acquire)
    }

    /// The state for [`crate::init_state`].
    pub(crate) fn state(&self) -> InitState {
        if self.is_orphaned() {
            return InitState::Failed(ORPHANED.to_owned());
        }
        // Acquire: pairs with the Release RMWs in `finish`.
        let state = self.state.load(Ordering::Acquire);
        if state & FAILED != 0 {
            InitState::Failed(self.failure())
        } else if state == 0 {
            InitState::Ready
        } else {
            InitState::Pending
        }
    }
}

#[cfg(all(test, not(callgate_loom)))]
mod tests;
