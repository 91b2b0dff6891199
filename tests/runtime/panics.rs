//! Panics and errors stop at the boundary: the fallback value is returned,
//! the message is the thread's last error, and the thread keeps working.

use callgate::__private::{self as cg, Attach, Failure, GatePolicy, Site};
use callgate_dev::{Spawn, call_from_c, run_threads, site};

/// Thousands of caught panics would drown the test output in messages.
fn quiet_panics() {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| std::panic::set_hook(Box::new(|_| {})));
}

/// Panics on odd input, fails on negative input, else returns its context id.
extern "C" fn moody(x: i32) -> i32 {
    static SITE: Site = site("moody", Attach::Bound, GatePolicy::Wait);
    cg::call(
        &SITE,
        || -100,
        || -200,
        |_| {
            if x < 0 {
                return Err(Failure::new(format!("negative input {x}")));
            }
            if x % 2 == 1 {
                panic!("odd input {x}");
            }
            cg::ok(cg::current_context_id().map_or(-3, |id| id as i32))
        },
    )
}

extern "C" fn panics_with_a_number(_: i32) -> i32 {
    static SITE: Site = site("panics_with_a_number", Attach::Bound, GatePolicy::Wait);
    cg::call(&SITE, || -100, || -200, |_| std::panic::panic_any(42_u64))
}

/// Calls `moody(1)` (which panics) through C, then carries on.
extern "C" fn outer(x: i32) -> i32 {
    static SITE: Site = site("outer", Attach::Bound, GatePolicy::Wait);
    cg::call(
        &SITE,
        || -100,
        || -200,
        |_| {
            let inner = call_from_c(moody, 1);
            cg::ok(if inner == -200 { x + 1 } else { -1 })
        },
    )
}

#[test]
fn a_panic_returns_the_fallback_and_records_the_message() {
    quiet_panics();
    let id = moody(0);
    assert!(id >= 0);
    assert_eq!(moody(3), -200);
    assert_eq!(
        callgate::last_error().as_deref(),
        Some("callback `moody` panicked: odd input 3")
    );
    assert_eq!(moody(2), id, "the thread keeps its context after a panic");
    assert_eq!(moody(-5), -100);
    assert_eq!(callgate::last_error().as_deref(), Some("negative input -5"));
    callgate::clear_last_error();
    assert_eq!(callgate::last_error(), None);
}

#[test]
fn a_non_string_payload_is_reported_as_such() {
    quiet_panics();
    assert_eq!(panics_with_a_number(0), -200);
    let message = callgate::last_error().unwrap();
    assert!(message.contains("non-string"), "{message}");
}

#[test]
fn panics_on_c_threads_are_caught_and_threads_keep_working() {
    quiet_panics();
    let before = callgate::stats().panics_caught;
    let results = run_threads(moody, 4, 1_001, Spawn::default());
    for result in results {
        // Calls alternate: even → context id, odd → fallback.
        assert!(result.first >= 0);
        assert_eq!(result.changes, 500);
    }
    assert!(callgate::stats().panics_caught - before >= 2_000);
}

#[test]
fn a_panic_in_a_nested_call_leaves_the_outer_call_intact() {
    quiet_panics();
    assert_eq!(outer(41), 42);
    let results = run_threads(outer, 2, 10, Spawn::default());
    assert!(
        results.iter().all(|r| r.first == 1 && r.changes == 9),
        "{results:?}"
    );
}
