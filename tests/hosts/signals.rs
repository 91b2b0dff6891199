//! Signal storms in a C program while its threads bind contexts or wait at
//! the init gate; the caller's signal mask is left exactly as it was.

use crate::host;

use std::time::Duration;

/// 1 000 threads (10 000 with `CALLGATE_FULL=1`) in waves of 50 make their
/// first calls (bind, `#[local]`, per-call, `Err`) while the main thread
/// `pthread_kill`s SIGUSR1 (handler without `SA_RESTART`) at every live
/// worker and `ITIMER_PROF` raises SIGPROF: no deadlock, every result right,
/// every worker's signal mask (three different masks) unchanged after each
/// call, one bind per thread, nothing bound at the end.
#[test]
fn signal_storm_during_first_binds() {
    let threads = host::size(1_000, 10_000).to_string();
    let outcome = host::run(
        host::host("signals").args(["binds", &threads]),
        Duration::from_secs(300),
    );
    outcome.assert_ok();
    assert_eq!(outcome.number("mask_changes"), 0.0);
    assert!(outcome.number("sigusr1_handled") > 0.0);
    assert_eq!(outcome.number("contexts_bound"), 0.0);
}

/// The same storm, but SIGUSR1's handler calls back, so a handler makes a
/// thread's first call while that thread may be inside its own first bind
/// (after a first wave filled the free list: a handler must not enter
/// malloc): every result right, one bind per thread — an interrupted bind
/// hands its context back and uses the handler's — and nothing bound at
/// the end.
#[test]
fn signal_handlers_calling_back_during_first_binds_leave_one_context() {
    reentrant_storm("reentrant-binds", host::size(1_000, 10_000));
}

/// Threads that never bind make `attach = per_call` calls under a signal
/// storm whose SIGUSR1 handler makes one too, so a handler's call may come
/// while the interrupted call takes the thread's cached context (one bit
/// test and reset of the slot), runs on it, or caches it again: every call
/// returns the right value, every attach is released, and no context stays
/// bound.
#[test]
fn signal_handlers_calling_back_during_per_call_calls() {
    let outcome = reentrant_storm("reentrant-per-call", host::size(200, 2_000));
    assert!(
        outcome.number("contexts_created_during_run") <= 2.0 * 50.0,
        "{outcome}"
    );
}

/// 500 threads (5 000 with `CALLGATE_FULL=1`) make `attach = per_call`
/// calls from their first call on while SIGUSR1's handler calls back with
/// a `#[local]`, per call 16 times on each thread, then bound: a handler's
/// call may bind the thread while the interrupted call attaches, or find
/// its per-call context between its attach and its entry, or its return
/// and its release. Once the threads have exited no context stays bound,
/// every attach was released once, and every `Local::bind` was released.
#[test]
fn signal_handlers_binding_during_per_call_first_calls_leave_nothing_bound() {
    let outcome = reentrant_storm("per-call-first", host::size(500, 5_000));
    assert_eq!(
        outcome.number("threads_called_back"),
        outcome.number("threads"),
        "{outcome}"
    );
    assert_eq!(
        outcome.number("binds_during_run"),
        outcome.number("releases_during_run"),
        "{outcome}"
    );
    assert_eq!(
        outcome.number("token_binds_during_run"),
        outcome.number("token_releases_during_run"),
        "{outcome}"
    );
}

/// 16 threads waiting at the gate of a slow init are stormed with SIGUSR1
/// and SIGPROF: none passes early, all get through once the init finishes,
/// masks unchanged.
#[test]
fn signal_storm_while_waiting_at_the_init_gate() {
    let outcome = host::run(
        host::host("signals")
            .args(["gate", "16"])
            .env("FIXTURE_INIT", "slow"),
        Duration::from_secs(120),
    );
    outcome.assert_ok();
    assert_eq!(outcome.number("gate_waits"), 16.0);
    assert_eq!(outcome.number("mask_changes"), 0.0);
}

/// Runs the signals host's storm `mode`, whose SIGUSR1 handler calls back,
/// with `threads` threads: it passes, handlers did call back, every result
/// is right and no context stays bound.
fn reentrant_storm(mode: &str, threads: u64) -> host::Outcome {
    let outcome = host::run(
        host::host("signals").args([mode, &threads.to_string()]),
        Duration::from_secs(300),
    );
    outcome.assert_ok();
    assert!(outcome.number("handler_calls") > 0.0);
    assert_eq!(outcome.number("wrong_results"), 0.0);
    assert_eq!(outcome.number("contexts_bound"), 0.0);
    outcome
}
