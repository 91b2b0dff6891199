//! `gate = wait | fail | skip` while a background `#[callgate::init]` is still
//! running. One test: the gate opens once per process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use callgate::{InitState, c_callback};
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn m_call_i32(cb: extern "C" fn(i32) -> i32, value: i32) -> i32;
}

/// Set by the test to let the init finish.
static RELEASE: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

fn release_init() {
    *RELEASE.0.lock().unwrap() = true;
    RELEASE.1.notify_all();
}

/// Holds the gate shut until the test releases it (or a minute passes, so a
/// broken test cannot hang the suite).
#[callgate::init(background)]
fn slow_start() {
    let guard = RELEASE.0.lock().unwrap();
    let _released = RELEASE
        .1
        .wait_timeout_while(guard, Duration::from_secs(60), |released| !*released);
}

#[c_callback(gate = wait, on_error = -1)]
fn waits(value: i32) -> i32 {
    value
}

#[c_callback(gate = fail, on_error = -1)]
fn fails_fast(value: i32) -> i32 {
    value
}

#[c_callback(gate = skip, on_error = -1)]
fn skips(value: i32) -> i32 {
    value
}

fn call(cb: extern "C" fn(i32) -> i32, value: i32) -> i32 {
    // SAFETY: `cb` is a valid callback.
    unsafe { m_call_i32(cb, value) }
}

#[test]
fn gate_policies_while_init_is_pending() {
    assert_eq!(callgate::init_state(), InitState::Pending);

    // `gate = fail`: `on_error` at once, with a message.
    callgate::clear_last_error();
    assert_eq!(call(fails_fast, 7), -1);
    let message = callgate::last_error().unwrap_or_default();
    assert!(
        message.contains("`fails_fast` was called before initialisation finished"),
        "{message}"
    );

    // `gate = skip`: runs at once.
    let started = Instant::now();
    assert_eq!(call(skips, 8), 8);
    assert!(started.elapsed() < Duration::from_secs(5));
    // The thread is bound now: its later calls run on its context, as on
    // an open gate, and take none from the pool (each did, and put it
    // back, while the fast path stayed closed for the init).
    let before = callgate::stats();
    for value in 0..100 {
        assert_eq!(call(skips, value), value);
    }
    let after = callgate::stats();
    assert_eq!(after.contexts_created, before.contexts_created);
    assert_eq!(after.contexts_free, before.contexts_free);
    assert_eq!(after.binds, before.binds);

    // `gate = wait`: blocks until the init finishes.
    static RETURNED: AtomicBool = AtomicBool::new(false);
    let waiter = std::thread::spawn(|| {
        let value = call(waits, 9);
        RETURNED.store(true, Ordering::SeqCst);
        value
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !RETURNED.load(Ordering::SeqCst),
        "a `gate = wait` call returned before init finished"
    );
    release_init();
    assert_eq!(waiter.join().unwrap(), 9);

    assert_eq!(callgate::init_state(), InitState::Ready);
    assert_eq!(call(fails_fast, 10), 10);
}
