//! Callbacks for C APIs that take a `void *`, from a C program compiled
//! against the generated header (`tests/c/linked/callbacks.c`): the
//! exported table of `local` callbacks, Rust state as their user data
//! (glibc's `qsort_r`, C threads), closures as (function, data, free) and
//! once closures as `pthread_create` start routines — every Rust value
//! dropped exactly once; and the misuse of a closure's data that aborts
//! with a message (freed twice, a once closure used twice).

use crate::host;

use std::time::Duration;

fn callbacks(args: &[&str]) -> host::Outcome {
    host::run(
        host::linked("callbacks").args(args),
        Duration::from_secs(300),
    )
}

/// `callbacks` with an init that calls nothing back: no init thread's
/// context goes to the free list at some point of the run, for the modes
/// whose next thread must get the context the last one gave up.
fn callbacks_without_init_context(args: &[&str]) -> host::Outcome {
    host::run(
        host::linked("callbacks")
            .args(args)
            .env("FIXTURE_INIT", "none"),
        Duration::from_secs(300),
    )
}

/// The table's entries, `qsort_r` sorting 1000 values with the counted
/// comparator and Rust state, a panicking comparison, NULL user data.
#[test]
fn the_table_and_user_data_from_c() {
    let outcome = callbacks(&["table"]);
    outcome.assert_ok();
    assert!(outcome.number("comparisons") >= 999.0);
    assert_eq!(outcome.number("checks"), 1010.0);
}

/// 8 threads call through shared user data and one `FnMut` closure, which
/// a ninth thread frees.
#[test]
fn user_data_and_a_closure_from_c_threads() {
    let calls = host::size(2_000, 50_000);
    let outcome = callbacks(&["threads", "8", &calls.to_string()]);
    outcome.assert_ok();
    assert_eq!(outcome.number("calls"), (16 * calls) as f64);
}

/// Closures made, called (a panicking call included) and freed, on this
/// thread or another; once closures run as thread start routines or freed
/// unstarted; a closure freed while a call is inside it.
#[test]
fn closures_made_called_and_freed_from_c() {
    let count = host::size(200, 5_000);
    let outcome = callbacks(&["closures", &count.to_string()]);
    outcome.assert_ok();
    assert_eq!(outcome.number("closures"), (count * 3 + 1) as f64);
}

/// Calls of an `FnMut` closure left by `longjmp` out of C code inside
/// them: the next call on the same thread takes the turn back (and the
/// abandoned call's reference to the closure), and a call from another
/// thread gets its turn after it; one left on a thread that then exits is
/// taken back by the next thread on its context; the closure is dropped
/// once when freed.
#[test]
fn calls_abandoned_by_longjmp_give_the_closure_back() {
    let outcome = callbacks_without_init_context(&["abandon", "50"]);
    outcome.assert_ok();
    assert_eq!(outcome.number("abandoned"), 50.0);
}

/// Calls of an `FnMut` closure left by `longjmp` inside a per-call
/// callback, whose context then goes to another thread: the next thread
/// on it takes the turn back, whether the context went to the free list
/// at the exit of the thread that cached it, or while that thread still
/// lived (a per-call release from its key destructor, after its exit
/// hook ran, which caches nothing).
#[test]
fn a_turn_left_under_a_per_call_context_goes_with_it() {
    let outcome = callbacks_without_init_context(&["handed-on"]);
    outcome.assert_ok();
    assert_eq!(outcome.number("handed_on"), 7.0);
}

/// A call suspended inside an `FnMut` closure on a coroutine stack, while
/// the callback it started under returns: the thread's next call is its
/// outermost, yet is refused with the fallback (the suspended call may
/// resume inside the body), and calls get their turn once it returns.
#[cfg(target_env = "gnu")]
#[test]
fn a_call_suspended_inside_a_closure_keeps_its_turn() {
    let outcome = callbacks(&["suspended"]);
    outcome.assert_ok();
    assert_eq!(outcome.number("suspended"), 1.0);
}

/// Threads call one `Closure::concurrent` at once (half of them bound
/// first, so that their calls announce it in their hazard words), nested
/// calls included; freed while a call is inside it on each thread, it is
/// dropped by the last to return; a call left by `longjmp` keeps it until
/// its thread exits.
#[test]
fn a_concurrent_closure_from_c_threads() {
    let calls = host::size(2_000, 50_000);
    let outcome = callbacks(&["concurrent", "8", &calls.to_string()]);
    outcome.assert_ok();
    assert_eq!(
        outcome.number("concurrent_calls"),
        (8 * (calls + 2) + 1) as f64
    );
}

/// `callbacks misuse CASE`: one misuse of a closure C owns, which must
/// abort the process with a message naming the closure.
fn misuse(case: &str) -> host::Outcome {
    callbacks(&["misuse", case])
}

/// A closure's `free` called twice: one no call holds any more, one a call
/// is still inside (so it is alive), and a concurrent one.
#[test]
fn a_closure_freed_twice_aborts_with_a_message() {
    for (case, closure) in [
        ("free-twice", "fixture_adder_new"),
        ("free-twice-in-call", "fixture_adder_new"),
        ("free-twice-concurrent", "fixture_tally_new"),
    ] {
        misuse(case).assert_aborted_with(&format!(
            "callgate: closure `callgate_fixture::callbacks::{closure}::{{{{closure}}}}` was freed \
             twice; aborting"
        ));
    }
}

/// An `FnMut` closure called after C freed it: its turn, retired by the
/// drop (the allocation kept as a tombstone), makes the call abort before
/// the body runs.
#[test]
fn a_closure_called_after_its_free_aborts_before_its_body_runs() {
    let outcome = misuse("call-after-free");
    outcome.assert_aborted_with(
        "callgate: closure \
         `callgate_fixture::callbacks::fixture_adder_new::{{closure}}` was \
         called after it was dropped; aborting",
    );
    assert!(
        !outcome.stderr.contains("out of range"),
        "the body ran\n{outcome}"
    );
}

/// A once closure called twice, called and then freed, or freed and then
/// called.
#[test]
fn a_once_closure_used_twice_aborts_with_a_message() {
    let closure = "`callgate_fixture::callbacks::fixture_once_new::{{closure}}`";
    misuse("once-twice").assert_aborted_with(&format!(
        "callgate: once closure {closure} was called twice; aborting"
    ));
    misuse("once-called-then-freed").assert_aborted_with(&format!(
        "callgate: once closure {closure} was freed after its call, which frees it; aborting"
    ));
    misuse("once-freed-then-called").assert_aborted_with(&format!(
        "callgate: once closure {closure} was called after it was freed; aborting"
    ));
}

/// The linked program resolves the fixture it was built against, also
/// under the LD_LIBRARY_PATH cargo gives tests (it names target/debug,
/// where another build of the fixture may be): glibc's `ldd` with this
/// process's environment says which file the loader would map.
#[test]
fn the_linked_program_loads_the_fixture_it_was_built_against() {
    if host::musl() || host::emulated() || std::env::var_os("CALLGATE_TEST_STATICLIB").is_some() {
        return; // musl's and qemu's loaders: the test drops LD_LIBRARY_PATH instead
    }
    let program = host::linked("callbacks").get_program().to_owned();
    let output = std::process::Command::new("ldd")
        .arg(&program)
        .output()
        .expect("run ldd");
    let listing = String::from_utf8_lossy(&output.stdout);
    let loaded = listing
        .lines()
        .find(|line| line.contains("libcallgate_fixture"))
        .and_then(|line| line.split(" => ").nth(1))
        .and_then(|rest| rest.split(" (").next())
        .unwrap_or_else(|| panic!("ldd lists no fixture:\n{listing}"));
    assert_eq!(
        std::fs::canonicalize(loaded).expect("the loaded fixture exists"),
        std::fs::canonicalize(host::fixture()).expect("the fixture exists"),
        "the program loads another build of the fixture"
    );
}
