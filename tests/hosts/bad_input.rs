//! Bad input and misbehaving Rust code at run time, from a C program that
//! `dlopen`s the fixture: nothing unwinds into C, the declared fallback comes
//! back with a last error that says what happened, or — where the policy
//! says so — the process aborts with a message.

use crate::host;

use std::time::Duration;

fn bad_input(mode: &str, callgate: Option<&str>) -> host::Outcome {
    let mut command = host::host("bad_input");
    command.arg(mode);
    if let Some(value) = callgate {
        command.env("CALLGATE", value);
    }
    host::run(&mut command, Duration::from_secs(60))
}

/// NULL for `&T`, `&mut T`, `&CStr`, `&str` (error naming the argument) and
/// for `Option<&T>`, `Option<&mut T>`, `Option<&CStr>`, `Option<&str>`
/// (`None`); a misaligned `&T`; invalid UTF-8 (a stray byte, a truncated
/// sequence, a surrogate) for `&str` and `Option<&str>`; panics with a
/// `&str`, a `String` and a non-string payload, from `i32`, `()` and pointer
/// returns; an `Err` whose `Display` works, panics, or returns
/// `fmt::Error`; panics in `Local::default`, `bind` and `release` (bound and
/// per-call); a nested call asking for a `#[local]` its caller holds; the
/// last-error API (truncation, clearing, per-thread). 44 checks of value and
/// message, all made by the host; the thread keeps working afterwards.
#[test]
fn bad_input_returns_the_fallback_and_records_the_message() {
    let outcome = bad_input("returns", None);
    outcome.assert_ok();
    assert_eq!(outcome.number("checks"), 44.0);
    assert_eq!(outcome.number("panics_caught"), 11.0);
    assert!(
        outcome.stderr.contains(
            "callgate: Local::release of `callgate_fixture::Faulty` panicked: \
             Faulty::release panicked; the value was dropped"
        ),
        "{outcome}"
    );
}

/// `on_panic = abort`: SIGABRT, with the callback and the panic message.
#[test]
fn on_panic_abort_aborts_with_a_message() {
    let outcome = bad_input("abort-on-panic", None);
    assert_eq!(outcome.get("calling"), Some("abort-on-panic"));
    outcome.assert_aborted_with(
        "callgate: callback `fixture_abort_on_panic` panicked: this panic aborts; aborting",
    );
}

/// `on_error = abort` with a NULL reference: SIGABRT naming the argument.
#[test]
fn on_error_abort_aborts_with_a_message() {
    let outcome = bad_input("abort-on-error", None);
    assert_eq!(outcome.get("calling"), Some("abort-on-error"));
    outcome.assert_aborted_with(
        "callgate: callback `fixture_abort_on_error` failed: argument `value` is NULL; aborting",
    );
}

/// A panic payload whose `Drop` panics cannot be handled without risking an
/// unwind into C: SIGABRT with a message.
#[test]
fn a_panic_payload_that_panics_on_drop_aborts_with_a_message() {
    let outcome = bad_input("payload-drop-panics", None);
    outcome.assert_aborted_with("callgate: dropping the payload of a panic");
}

/// A panic with the fixture's panic strategy: with unwinding panics the
/// callback returns its fallback and records the message; built with
/// `panic = "abort"` (`cargo xtask test` runs this against such a build too)
/// nothing can catch the panic, and the process aborts with Rust's panic
/// message before any fallback.
#[test]
fn a_panic_returns_the_fallback_or_with_the_abort_strategy_aborts() {
    let outcome = bad_input("panic-strategy", None);
    match outcome.get("panic_aborts") {
        Some("0") => {
            outcome.assert_ok();
            assert_eq!(outcome.get("survived"), Some("1"), "{outcome}");
        }
        Some("1") => {
            outcome.assert_aborted_with("static panic message");
            assert_eq!(outcome.get("survived"), None, "{outcome}");
        }
        other => panic!("no panic strategy reported ({other:?})\n{outcome}"),
    }
}

/// `CALLGATE=panic=abort` turns a callback's panic fallback into an abort.
#[test]
fn the_panic_abort_setting_aborts_with_a_message() {
    let outcome = bad_input("panic-abort-setting", Some("panic=abort"));
    outcome.assert_aborted_with(
        "callgate: callback `fixture_panic` panicked: static panic message; aborting",
    );
}
