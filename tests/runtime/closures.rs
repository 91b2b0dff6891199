//! `Closure` and `OnceClosure` called from C threads: `FnMut` calls take
//! turns and a re-entrant one fails, `Fn + Sync` calls run in parallel,
//! panics and `Err`s return the fallback with a last error, a drop waits
//! for the calls in flight, C's `free` drops the closure on C's thread (or
//! as the call it frees it from returns), a once closure frees itself after
//! its call.

use core::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use callgate::{Closure, OnceClosure};
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev::Hold;

type DataFirst = unsafe extern "C" fn(*mut c_void, i32) -> i32;
type DataLast = unsafe extern "C" fn(i32, *mut c_void) -> i32;
type Free = unsafe extern "C" fn(*mut c_void);

unsafe extern "C" {
    fn cb_call_first(cb: DataFirst, data: *mut c_void, value: i32) -> i32;
    fn cb_call_last(cb: DataLast, value: i32, data: *mut c_void) -> i32;
    fn cb_threads(cb: DataFirst, data: *mut c_void, threads: c_int, calls: i32) -> i64;
    fn cb_start(cb: DataFirst, data: *mut c_void, value: i32) -> *mut c_void;
    fn cb_join(started: *mut c_void) -> i32;
    fn cb_free_on_thread(release: Free, data: *mut c_void) -> c_int;
}

fn last_error() -> String {
    callgate::last_error().unwrap_or_default()
}

/// Records the thread that drops it.
struct Probe(Arc<Mutex<Vec<ThreadId>>>);

impl Probe {
    fn new() -> (Probe, Arc<Mutex<Vec<ThreadId>>>) {
        let drops = Arc::new(Mutex::new(Vec::new()));
        (Probe(Arc::clone(&drops)), drops)
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(std::thread::current().id());
    }
}

#[test]
fn fnmut_calls_from_c_threads_take_turns() {
    // A plain counter: correct only if no two calls overlap.
    let mut calls = 0_u64;
    let seen = Arc::new(Mutex::new(0_u64));
    let report = Arc::clone(&seen);
    let count = Closure::new(-1, move |value: i32| -> i32 {
        calls += 1;
        *report.lock().unwrap() = calls;
        value % 2
    });
    // SAFETY: the closure outlives the threads.
    let sum = unsafe { cb_threads(count.data_first(), count.data(), 8, 2000) };
    assert_eq!(sum, 8 * 1000);
    assert_eq!(*seen.lock().unwrap(), 8 * 2000);
}

#[test]
fn concurrent_calls_run_in_parallel() {
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now, peak) = (Arc::clone(&inside), Arc::clone(&most));
    let parallel = Closure::concurrent(-1, move |_value: i32| -> i32 {
        let here = now.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(here, Ordering::SeqCst);
        // Stay until all four are inside (or give up after 5 s).
        let deadline = Instant::now() + Duration::from_secs(5);
        while peak.load(Ordering::SeqCst) < 4 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        now.fetch_sub(1, Ordering::SeqCst);
        1
    });
    // SAFETY: the closure outlives the threads.
    let sum = unsafe { cb_threads(parallel.data_first(), parallel.data(), 4, 1) };
    assert_eq!(sum, 4);
    assert_eq!(most.load(Ordering::SeqCst), 4);
}

/// The closure's own C function and data, for the re-entrant tests.
static REENTER: OnceLock<(DataFirst, usize)> = OnceLock::new();

fn reenter(value: i32) -> i32 {
    let (function, data) = *REENTER.get().expect("set before the first call");
    // SAFETY: the closure's own parts, alive for the test.
    unsafe { cb_call_first(function, data as *mut c_void, value) }
}

#[test]
fn a_reentrant_fnmut_call_fails_instead_of_aliasing() {
    let mut depth = 0_u32;
    let nested = Closure::new(-1, move |value: i32| -> i32 {
        depth += 1;
        assert_eq!(depth, 1, "two calls inside one FnMut at once");
        let result = if value > 0 { reenter(value - 1) } else { 7 };
        depth -= 1;
        result
    });
    REENTER
        .set((nested.data_first(), nested.data() as usize))
        .expect("set once");
    // SAFETY: the closure outlives the call.
    let outer = unsafe { cb_call_first(nested.data_first(), nested.data(), 1) };
    assert_eq!(outer, -1, "the inner call returned the fallback");
    assert!(
        last_error().contains("called again from inside its own call"),
        "{}",
        last_error()
    );
    // The closure still works afterwards.
    // SAFETY: as above.
    let again = unsafe { cb_call_first(nested.data_first(), nested.data(), 0) };
    assert_eq!(again, 7);
}

#[test]
fn panics_and_errors_return_the_fallback() {
    let before = callgate::stats();
    let checked = Closure::new(-1, |value: i32| -> Result<i32, String> {
        match value {
            0 => panic!("zero is not allowed"),
            v if v < 0 => Err(format!("{v} is negative")),
            v => Ok(v * 10),
        }
    });
    // SAFETY: the closure outlives the calls.
    unsafe {
        assert_eq!(cb_call_last(checked.data_last(), 4, checked.data()), 40);
        assert_eq!(cb_call_last(checked.data_last(), 0, checked.data()), -1);
        let message = last_error();
        assert!(
            message.starts_with("callback `runtime::closures::"),
            "{message}"
        );
        assert!(
            message.ends_with("panicked: zero is not allowed"),
            "{message}"
        );
        assert_eq!(cb_call_last(checked.data_last(), -3, checked.data()), -1);
        assert_eq!(last_error(), "-3 is negative");
        // Still callable after the panic.
        assert_eq!(cb_call_first(checked.data_first(), checked.data(), 5), 50);
    }
    let after = callgate::stats();
    assert!(after.panics_caught > before.panics_caught);
    assert!(after.errors_returned > before.errors_returned);
}

/// Dropping the `Closure` while a C thread is inside it defers the drop:
/// the call finishes, and its thread drops the closure.
#[test]
fn a_drop_waits_for_the_calls_in_flight() {
    let (probe, drops) = Probe::new();
    let hold = Arc::new(Hold::default());
    let holding = Arc::clone(&hold);
    let slow = Closure::new(-1, move |value: i32| -> i32 {
        let _ = &probe;
        holding.hold();
        value + 1
    });
    // SAFETY: the closure's parts; C starts the call before the drop.
    let started = unsafe { cb_start(slow.data_first(), slow.data(), 41) };
    assert!(!started.is_null());
    hold.wait_until_holding();
    drop(slow);
    assert!(drops.lock().unwrap().is_empty(), "dropped during a call");
    hold.release();
    // SAFETY: started above.
    assert_eq!(unsafe { cb_join(started) }, 42);
    let drops = drops.lock().unwrap();
    assert_eq!(drops.len(), 1);
    assert_ne!(
        drops[0],
        std::thread::current().id(),
        "dropped by the C thread"
    );
}

/// The closure C frees from inside a call of its own (a callback that
/// unregisters itself): dropped as that call returns, on its thread, for
/// both kinds, from a C thread's first call (the thread bound by it) and
/// from a bound thread.
#[test]
fn a_closure_freed_inside_its_own_call_is_dropped_as_the_call_returns() {
    /// Where the call finds its closure's `free` and data.
    static SELF_FREE: Mutex<Option<(Free, usize)>> = Mutex::new(None);
    for concurrent in [false, true] {
        for bound_first in [false, true] {
            let (probe, drops) = Probe::new();
            let seen = Arc::clone(&drops);
            let body = move |value: i32| -> i32 {
                let _ = &probe;
                let (free, data) = SELF_FREE.lock().unwrap().take().expect("set");
                // SAFETY: the closure's own parts; C frees once.
                unsafe { free(data as *mut c_void) };
                assert!(seen.lock().unwrap().is_empty(), "dropped under its call");
                value + 1
            };
            let parts = if concurrent {
                Closure::concurrent(-1, body).into_raw_parts()
            } else {
                Closure::new(-1, body).into_raw_parts()
            };
            *SELF_FREE.lock().unwrap() = Some((parts.free, parts.data as usize));
            let (function, data) = (parts.data_first, parts.data as usize);
            let caller = std::thread::spawn(move || {
                if bound_first {
                    let warm = Closure::concurrent(0, |value: i32| value);
                    // SAFETY: the closure outlives the call.
                    unsafe { cb_call_first(warm.data_first(), warm.data(), 0) };
                }
                // SAFETY: the closure is alive until its call frees it.
                let result = unsafe { cb_call_first(function, data as *mut c_void, 41) };
                (result, std::thread::current().id())
            });
            let (result, caller) = caller.join().unwrap();
            assert_eq!(result, 42, "{} ({concurrent}, {bound_first})", last_error());
            assert_eq!(*drops.lock().unwrap(), [caller]);
        }
    }
}

/// A closure C owns is dropped by C's `free`, on the thread that calls it.
#[test]
fn c_frees_the_closure_it_owns_on_its_thread() {
    let (probe, drops) = Probe::new();
    let parts = Closure::new(-1, move |value: i32| -> i32 {
        let _ = &probe;
        value * 2
    })
    .into_raw_parts();
    // SAFETY: the parts belong together; C frees once, after its calls.
    unsafe {
        assert_eq!(cb_call_first(parts.data_first, parts.data, 21), 42);
        assert_eq!(cb_free_on_thread(parts.free, parts.data), 0);
    }
    let drops = drops.lock().unwrap();
    assert_eq!(drops.len(), 1);
    assert_ne!(drops[0], std::thread::current().id());
}

#[test]
fn once_closures_free_themselves_after_their_call() {
    // Called once, on a C thread: runs, then frees itself there.
    let (probe, drops) = Probe::new();
    let once = OnceClosure::new(-1, move |value: i32| -> i32 {
        drop(probe);
        value + 100
    })
    .into_raw_parts();
    // SAFETY: called exactly once.
    let started = unsafe { cb_start(once.data_first, once.data, 1) };
    // SAFETY: started above.
    assert_eq!(unsafe { cb_join(started) }, 101);
    assert_eq!(drops.lock().unwrap().len(), 1);

    // Never called: `free` drops the body uncalled.
    let (probe, drops) = Probe::new();
    let never = OnceClosure::new(-1, move |value: i32| -> i32 {
        let _ = &probe;
        value
    })
    .into_raw_parts();
    // SAFETY: not called, freed once.
    unsafe { (never.free)(never.data) };
    assert_eq!(drops.lock().unwrap().len(), 1);

    // Not handed over: dropping it drops the body.
    let (probe, drops) = Probe::new();
    let kept = OnceClosure::new(-1, move |value: i32| -> i32 {
        let _ = &probe;
        value
    });
    drop(kept);
    assert_eq!(drops.lock().unwrap().len(), 1);

    // A panicking once closure returns the fallback and still frees itself.
    let (probe, drops) = Probe::new();
    let failing = OnceClosure::new(-7, move |_value: i32| -> i32 {
        let _probe = probe;
        panic!("once and done")
    })
    .into_raw_parts();
    // SAFETY: called exactly once.
    let result = unsafe { cb_call_first(failing.data_first, failing.data, 0) };
    assert_eq!(result, -7);
    assert!(last_error().ends_with("panicked: once and done"));
    assert_eq!(drops.lock().unwrap().len(), 1);
}

/// A panic in the drop of what a closure captured is caught where the
/// drop happens (here, in C's `free`): nothing unwinds into C.
#[test]
fn a_panicking_drop_stays_in_free() {
    struct Explodes;
    impl Drop for Explodes {
        fn drop(&mut self) {
            panic!("Explodes does not go quietly");
        }
    }
    let explodes = Explodes;
    let parts = Closure::new((), move |_value: i32| {
        let _ = &explodes;
    })
    .into_raw_parts();
    // SAFETY: freed once, from a C thread.
    assert_eq!(unsafe { cb_free_on_thread(parts.free, parts.data) }, 0);
}
