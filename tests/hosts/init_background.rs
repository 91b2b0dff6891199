//! The fixture's background `#[callgate::init]` seen from a C program that
//! `dlopen`s it: callers wait for it, init code can call back through C, and
//! a failed init turns every call into its `on_error` value.

use crate::host;

use std::time::Duration;

fn init(mode: &str, fixture_init: Option<&str>, extra: &[&str]) -> host::Outcome {
    let mut command = host::host("init");
    command.arg(mode).args(extra);
    if let Some(value) = fixture_init {
        command.env("FIXTURE_INIT", value);
    }
    let outcome = host::run(&mut command, Duration::from_secs(60));
    outcome.assert_ok();
    outcome
}

/// The init sorts with C's `qsort` and a gated Rust comparator: a callback
/// made by init code through C runs at once instead of waiting for the init
/// it is part of (which would deadlock), and the init then succeeds.
#[test]
fn init_calling_back_through_c_does_not_deadlock() {
    let outcome = init("ready", None, &[]);
    assert_eq!(outcome.number("init_sorted"), 1.0);
}

/// 16 threads call during a slow init: all 16 wait at the gate (none
/// returns early), `gate = fail` fails fast meanwhile, the init calls the
/// host's C hook which calls gated callbacks (they run), and once the init
/// finishes every waiter gets its correct result.
#[test]
fn sixteen_callers_wait_for_a_slow_init_then_succeed() {
    let rounds = host::size(2, 20);
    for _ in 0..rounds {
        let outcome = init("slow", Some("slow"), &["16"]);
        assert_eq!(outcome.number("gate_waits"), 16.0);
        assert_eq!(outcome.number("init_hook_result"), 101.0);
        assert!(outcome.number("min_wait_ms") >= 50.0);
    }
}

/// An init that returns `Err`: every kind of callback (value, `#[local]`,
/// per-call, reference, string, `Result`, unit and pointer returns), on the
/// main thread and on threads that called while the init ran, returns its
/// `on_error` value without running its body, and the last error is
/// `initialisation failed: `fixture_init`: …`.
#[test]
fn a_failing_init_fails_every_call_with_its_message() {
    let outcome = init("failed", Some("fail"), &["fixture init failed on purpose"]);
    assert_eq!(
        outcome.get("init_message"),
        Some("`fixture_init`: fixture init failed on purpose")
    );
}

/// The same for an init that panics: the panic message is the reason.
#[test]
fn a_panicking_init_fails_every_call_with_its_message() {
    let outcome = init(
        "failed",
        Some("panic"),
        &["fixture init panicked on purpose"],
    );
    assert!(outcome.stderr.contains("fixture init panicked on purpose"));
}
