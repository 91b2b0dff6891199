//! `fork` while other threads contend for a `Closure::new` closure: two
//! threads call it in a loop, so that at any instant one may hold the turn
//! while the other waits for it, flags the turn as waited for, is woken or
//! wakes. Each child forked meanwhile then calls the closure from its own
//! thread (taking over a turn the fork left held, and ending a turn flagged
//! as waited for) and from two new threads that contend with each other.
//! None of it may block on anything a thread the child does not have held.

use core::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use callgate::Closure;

type DataFirst = unsafe extern "C" fn(*mut c_void, i32) -> i32;

unsafe extern "C" {
    fn cb_call_first(cb: DataFirst, data: *mut c_void, value: i32) -> i32;
}

/// The closure's C function and data, to call from any thread.
#[derive(Clone, Copy)]
struct Callable(DataFirst, usize);

impl Callable {
    fn call(self, value: i32) -> i32 {
        // SAFETY: the closure outlives every call (the test keeps it, and
        // joins the threads that call it).
        unsafe { cb_call_first(self.0, self.1 as *mut c_void, value) }
    }
}

/// Forks made while the two threads contend.
const FORKS: usize = 2_000;
/// The value the contending threads call with.
const CONTENDING: i32 = 1_000;
/// Calls each of the child's two new threads makes.
const CHILD_CALLS: i32 = 200;

/// The child's checks: every call returns `value + 1` and is counted by
/// the closure once (from the count its first call stored: a call the fork
/// left inside the body may have counted itself without storing the count).
/// Returns the exit status.
fn child_status(callable: Callable, count: &'static AtomicU64) -> i32 {
    if callable.call(1) != 2 {
        return 1;
    }
    let before = count.load(Ordering::SeqCst);
    if callable.call(2) != 3 {
        return 1;
    }
    let threads: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                (0..CHILD_CALLS).all(|value| callable.call(value) == value + 1)
            })
        })
        .collect();
    if !threads
        .into_iter()
        .all(|thread| thread.join().is_ok_and(|ok| ok))
    {
        return 2;
    }
    let calls = 1 + 2 * CHILD_CALLS as u64;
    if count.load(Ordering::SeqCst) - before != calls {
        return 3;
    }
    0
}

#[test]
fn a_child_forked_while_threads_contend_for_a_closure_calls_it() {
    crate::child::alone(|| {
        static COUNT: AtomicU64 = AtomicU64::new(0);
        static STOP: AtomicBool = AtomicBool::new(false);
        // Not atomic: the turns keep the calls apart (an `FnMut` body).
        let mut calls = 0_u64;
        let closure = Closure::new(-1, move |value: i32| -> i32 {
            calls += 1;
            COUNT.store(calls, Ordering::SeqCst);
            if value == CONTENDING {
                // Long enough that the other contender usually waits for the
                // turn, and is woken at its end.
                let start = std::time::Instant::now();
                while start.elapsed() < Duration::from_micros(2) {
                    std::hint::spin_loop();
                }
            }
            value + 1
        });
        let callable = Callable(closure.data_first(), closure.data() as usize);
        let contenders: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(move || {
                    while !STOP.load(Ordering::Relaxed) {
                        assert_eq!(callable.call(CONTENDING), CONTENDING + 1);
                    }
                })
            })
            .collect();
        for fork in 0..FORKS {
            // SAFETY: the child runs its checks and `_exit`s.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                let status = child_status(callable, &COUNT);
                // SAFETY: `_exit` ends the child without running the parent's
                // atexit handlers or flushing its buffers.
                unsafe { libc::_exit(status) }
            }
            let status = callgate_dev::wait_for_child(
                pid,
                Duration::from_secs(10),
                &format!("child {fork} blocked calling the closure"),
            );
            assert_eq!(status, 0, "child {fork}: check failed (see `child_status`)");
        }
        STOP.store(true, Ordering::Relaxed);
        for contender in contenders {
            contender.join().unwrap();
        }
        drop(closure);
    });
}
