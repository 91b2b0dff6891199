//! A count of rings that threads can sleep on: see [`Bell`].

use super::{AtomicU32, Ordering};
#[cfg(not(all(any(target_os = "linux", target_os = "android"), not(callgate_loom))))]
use super::{Mutex, lock};
#[cfg(callgate_loom)]
use loom::sync::Condvar;
#[cfg(not(any(target_os = "linux", target_os = "android", callgate_loom)))]
use std::sync::Condvar;

/// A count of rings that threads can sleep on: the waiting half of a
/// lock-free handshake. A thread reads the count ([`rings`](Bell::rings)),
/// looks at the state it waits on, and sleeps ([`wait`](Bell::wait)) only
/// while the count is unchanged; a thread that changes the state then
/// [`ring`](Bell::ring)s. On Linux both are one `futex` call and no lock
/// is held (so `fork` is safe); elsewhere, and in the loom models, a mutex
/// and a condition variable stand in.
pub(crate) struct Bell {
    /// Rings so far, wrapping.
    rings: AtomicU32,
    sleepers: Sleepers,
}

impl Bell {
    #[cfg(not(callgate_loom))]
    pub(crate) const fn new() -> Bell {
        Bell {
            rings: AtomicU32::new(0),
            sleepers: Sleepers::new(),
        }
    }

    /// `new` for the loom models, whose primitives are not `const`.
    #[cfg(callgate_loom)]
    pub(crate) fn new() -> Bell {
        Bell {
            rings: AtomicU32::new(0),
            sleepers: Sleepers::new(),
        }
    }

    /// Rings so far, to pass to [`wait`](Bell::wait) after looking at the state.
    pub(crate) fn rings(&self) -> u32 {
        // Acquire: pairs with `ring`'s Release increment: the state change rung
        // for is seen.
        self.rings.load(Ordering::Acquire)
    }

    /// Sleeps while the bell has rung `seen` times; returns at the next ring
    /// or sooner (a signal, a spurious wake-up), so the caller looks again.
    /// (Missed only if the count wrapped round to `seen`: 2³² rings.)
    pub(crate) fn wait(&self, seen: u32) {
        self.sleepers.wait(&self.rings, seen, None);
    }

    /// [`wait`](Bell::wait), but for at most `timeout`.
    #[cfg(not(callgate_loom))]
    pub(crate) fn wait_timeout(&self, seen: u32, timeout: core::time::Duration) {
        self.sleepers.wait(&self.rings, seen, Some(timeout));
    }

    /// Wakes every thread waiting on a count read before this.
    pub(crate) fn ring(&self) {
        // Release: pairs with the Acquire in `rings`.
        self.rings.fetch_add(1, Ordering::Release);
        self.sleepers.wake_all(&self.rings);
    }
}

/// Where [`Bell`] waiters sleep: the futex queue of the count's address.
#[cfg(all(any(target_os = "linux", target_os = "android"), not(callgate_loom)))]
struct Sleepers;

#[cfg(all(any(target_os = "linux", target_os = "android"), not(callgate_loom)))]
impl Sleepers {
    const fn new() -> Sleepers {
        Sleepers
    }

    /// Sleeps while `rings` holds `seen`, until woken, interrupted or timed
    /// out.
    fn wait(&self, rings: &AtomicU32, seen: u32, timeout: Option<core::time::Duration>) {
        let timeout = timeout.map(|timeout| libc::timespec {
            // Saturated at 2³¹ − 1 s where `time_t` is 32 bits.
            tv_sec: timeout.as_secs().try_into().unwrap_or(i32::MAX.into()),
            // Under 10⁹: fits every `tv_nsec`.
            tv_nsec: i32::try_from(timeout.subsec_nanos()).unwrap_or(0).into(),
        });
        // SAFETY: `FUTEX_WAIT` reads the aligned `u32` at the address,
        // kept alive by the caller's borrow, and the relative timeout, a
        // `timespec` on this stack or null; it writes nothing. Private: a
        // bell is never in shared memory. Any return means look again.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                rings.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                seen,
                timeout
                    .as_ref()
                    .map_or(core::ptr::null(), core::ptr::from_ref::<libc::timespec>),
            );
        }
    }

    /// Wakes every thread sleeping on `rings`, which was just incremented.
    fn wake_all(&self, rings: &AtomicU32) {
        // SAFETY: `FUTEX_WAKE` only wakes the threads queued on the
        // address, which the caller's borrow keeps alive during the call;
        // it reads and writes no memory. `i32::MAX`: all of them.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                rings.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                i32::MAX,
            );
        }
    }
}

/// Where the threads waiting for a [`Bell`] sleep: a condition variable,
/// and the mutex that orders a wait's look at the count with a wake-up.
#[cfg(not(all(any(target_os = "linux", target_os = "android"), not(callgate_loom))))]
struct Sleepers {
    lock: Mutex<()>,
    wake: Condvar,
}

#[cfg(not(all(any(target_os = "linux", target_os = "android"), not(callgate_loom))))]
impl Sleepers {
    #[cfg(not(callgate_loom))]
    const fn new() -> Sleepers {
        Sleepers {
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    #[cfg(callgate_loom)]
    fn new() -> Sleepers {
        Sleepers {
            lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Sleeps while `rings` holds `seen`, until woken (or spuriously), or
    /// `timeout` passed.
    fn wait(&self, rings: &AtomicU32, seen: u32, timeout: Option<core::time::Duration>) {
        let guard = lock(&self.lock);
        // Relaxed: `wake_all` is called after the increment and takes
        // `lock` before it notifies, so under `lock` this sees every ring
        // whose notification could come before this thread waits; any
        // later one notifies it.
        if rings.load(Ordering::Relaxed) == seen {
            // A poisoned lock guards nothing here: the results are dropped.
            match timeout {
                None => drop(self.wake.wait(guard)),
                #[cfg(not(callgate_loom))]
                Some(timeout) => drop(self.wake.wait_timeout(guard, timeout)),
                #[cfg(callgate_loom)]
                Some(_) => unreachable!("the loom models never wait with a timeout"),
            }
        }
    }

    /// Wakes every thread sleeping on `rings`, which was just incremented.
    fn wake_all(&self, _rings: &AtomicU32) {
        // A thread that found the old count under `lock` waits already
        // once this takes it.
        drop(lock(&self.lock));
        self.wake.notify_all();
    }
}
