//! Callbacks whose frames C code abandons, from a C program that `dlopen`s
//! the fixture: `longjmp` out of a nested C call (libpng-style error
//! handling), `pthread_exit`, and deferred and asynchronous cancellation
//! acted on inside a callback. Run against the debug and the release build
//! of the fixture (`CALLGATE_FIXTURE_PROFILE`, see `cargo xtask test`).

use crate::host;

use std::time::Duration;

fn abandon(mode: &str, threads: u64) -> host::Outcome {
    host::run(
        host::host("abandon").args([mode, &threads.to_string()]),
        Duration::from_secs(300),
    )
}

/// At most two waves of 8 threads' contexts (one wave exiting while the
/// next binds) plus the init thread's.
const MAX_CONTEXTS: f64 = 2.0 * 8.0 + 2.0;

fn assert_released_once_per_thread(outcome: &host::Outcome, threads: u64) {
    outcome.assert_ok();
    assert_eq!(outcome.number("contexts_bound"), 0.0, "{outcome}");
    assert_eq!(
        outcome.number("token_binds_during_run"),
        threads as f64,
        "{outcome}"
    );
    assert_eq!(
        outcome.number("token_releases_during_run"),
        threads as f64,
        "{outcome}"
    );
    assert!(
        outcome.number("contexts_created_during_run") <= MAX_CONTEXTS,
        "{outcome}"
    );
}

/// 1 000 threads (10 000 with `CALLGATE_FULL=1`) each `longjmp` out of a
/// callback that holds their `#[local]` value, then call that callback
/// 1 000 times: every call succeeds on the same context with the same
/// value, a nested request for it is still refused, each thread's context
/// is released once when it exits, and no context stays bound. Then a
/// call nested in another holds the value and is abandoned by a jump that
/// lands inside the outer callback, which returns: the value is free again
/// at the top and three callbacks deep.
#[test]
fn longjmp_out_of_a_callback_leaves_the_local_usable() {
    let threads = host::size(1_000, 10_000);
    assert_released_once_per_thread(&abandon("longjmp", threads), threads);
}

/// The same out of an `attach = per_call` nest on threads that are not
/// bound: the abandoned per-call context is released by the thread's next
/// outermost return, or by its exit hook when the thread exits right after
/// the jump; no context stays bound.
#[test]
fn longjmp_out_of_a_per_call_callback_releases_its_context() {
    let threads = host::size(1_000, 10_000);
    let outcome = abandon("longjmp-per-call", threads);
    outcome.assert_ok();
    assert_eq!(outcome.number("contexts_bound"), 0.0, "{outcome}");
    assert!(
        outcome.number("contexts_created_during_run") <= MAX_CONTEXTS,
        "{outcome}"
    );
}

/// Ending a thread inside a callback: with the release fixture the
/// unwind passes the trampoline's frames (their `extern "C"` calls cannot
/// unwind, so they have no landing pad) and the key destructor releases
/// the context and runs `Local::release` once per thread; with the debug
/// fixture the unwind meets a landing pad and the process aborts with a
/// message naming the callback. With musl nothing unwinds: the thread
/// ends with the callback's frames abandoned, and the key destructor
/// releases the context in either build.
///
/// At `opt-level` 1, "s" or "z" (`host::extern_c_unwind_may_abort`) the
/// process may abort instead, where the out-of-line path's unwind table
/// leaves the body's call out: either outcome, nothing else.
fn ends_inside_a_callback(mode: &str) {
    if host::fixture_is_release() || !host::thread_exit_unwinds() {
        let threads = host::size(1_000, 10_000);
        let outcome = abandon(mode, threads);
        if aborted_where_it_may(&outcome) {
            return;
        }
        assert_released_once_per_thread(&outcome, threads);
        assert_eq!(outcome.number("ended_inside"), threads as f64);
    } else {
        abandon(mode, 1)
            .assert_aborted_with("is unwinding through callback `fixture_hold_token`; aborting");
    }
}

/// True when the host died of SIGABRT from an unwind out of a C function
/// declared `extern "C"`, in a build where that may happen (see
/// `ends_inside_a_callback`).
fn aborted_where_it_may(outcome: &host::Outcome) -> bool {
    host::extern_c_unwind_may_abort()
        && host::thread_exit_unwinds()
        && outcome.signal() == Some(libc::SIGABRT)
}

/// `pthread_exit` inside an `attach = per_call` callback on threads that
/// are not bound: with the release fixture the unwind passes the
/// trampoline's frames (its release path is `extern "C"`, so it has no
/// landing pad either) and the exit hook releases the per-call context, so
/// no context stays bound; with the debug fixture the process aborts naming
/// the callback. With musl nothing unwinds, and the exit hook releases the
/// context in either build.
#[test]
fn pthread_exit_inside_a_per_call_callback_releases_its_context() {
    if host::fixture_is_release() || !host::thread_exit_unwinds() {
        let threads = host::size(1_000, 10_000);
        let outcome = abandon("exit-per-call", threads);
        if aborted_where_it_may(&outcome) {
            return;
        }
        outcome.assert_ok();
        assert_eq!(outcome.number("contexts_bound"), 0.0, "{outcome}");
        assert_eq!(outcome.number("ended_inside"), threads as f64);
        assert!(
            outcome.number("contexts_created_during_run") <= MAX_CONTEXTS,
            "{outcome}"
        );
    } else {
        abandon("exit-per-call", 1)
            .assert_aborted_with("is unwinding through callback `fixture_nest_per_call`; aborting");
    }
}

#[test]
fn pthread_exit_inside_a_callback_releases_the_context() {
    ends_inside_a_callback("exit");
}

/// The same through each way into the trampoline, so that no call site of
/// it stops the unwind in a release build: the thread's first call (the
/// out-of-line path that binds it), a call whose fast path finds the
/// `#[local]` value it remembers, and a call nested in another callback.
#[test]
fn pthread_exit_inside_a_callback_by_every_path_releases_the_context() {
    for mode in ["exit-first", "exit-remembered", "exit-nested"] {
        ends_inside_a_callback(mode);
    }
}

/// `pthread_exit` in a C function the callback declares `extern "C-unwind"`
/// (as Rust requires for a function that may unwind): the forced unwind
/// meets the call's guard in every build profile, and the process aborts
/// with a message naming the callback, both in a thread's first call (the
/// out-of-line path that binds it) and in a call the fast path serves.
/// `cargo xtask test` runs it against the debug and release builds and the
/// builds at `opt-level` "s" and "z" and with fat LTO. With musl nothing
/// unwinds: the thread ends and its context is released.
#[test]
fn pthread_exit_through_a_c_unwind_function_aborts_naming_the_callback() {
    for mode in ["exit-unwinding-first", "exit-unwinding-bound"] {
        if host::thread_exit_unwinds() {
            abandon(mode, 1).assert_aborted_with(
                "is unwinding through callback `fixture_hold_token_unwinding`; aborting",
            );
        } else {
            let threads = host::size(1_000, 10_000);
            let outcome = abandon(mode, threads);
            assert_released_once_per_thread(&outcome, threads);
            assert_eq!(outcome.number("ended_inside"), threads as f64);
        }
    }
}

#[test]
fn deferred_cancel_inside_a_callback_releases_the_context() {
    ends_inside_a_callback("cancel");
}

#[test]
fn asynchronous_cancel_inside_a_callback_releases_the_context() {
    ends_inside_a_callback("async-cancel");
}

/// A C++ exception thrown by host code a callback called, caught by the
/// C++ code that called the callback, on 1 000 threads: with the release
/// fixture the exception passes the trampoline's frames, the next call of
/// the same callback finds the `#[local]` value free again, and each
/// thread's context is released once at exit; with the debug fixture the
/// exception meets a landing pad and the process aborts naming the
/// callback.
#[test]
fn a_cpp_exception_through_a_callback_is_survived() {
    let run = |threads: u64| {
        host::run(
            host::host("exception").arg(threads.to_string()),
            Duration::from_secs(300),
        )
    };
    if host::fixture_is_release() {
        let threads = host::size(1_000, 10_000);
        let outcome = run(threads);
        if aborted_where_it_may(&outcome) {
            return;
        }
        assert_released_once_per_thread(&outcome, threads);
    } else {
        run(1).assert_aborted_with("is unwinding through callback `fixture_hold_token`; aborting");
    }
}
