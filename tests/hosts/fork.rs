//! `fork()` in a C program while other threads bind and release contexts.

use crate::host;

use std::time::Duration;

/// 200 forks (2 000 with `CALLGATE_FULL=1`) while two threads churn
/// short-lived bound threads and two make per-call callbacks in a tight
/// loop; the forks come in turn from the bound main thread, from inside a
/// callback, from a thread that never called back, and from a thread that
/// made only per-call callbacks (its released context kept aside). Every
/// child makes callbacks (plain, `#[local]`, per-call, `Err` + last error,
/// caught panic) on its own thread and on a new thread, which must run on
/// different contexts, and exits 0 within 5 s.
#[test]
fn fork_while_other_threads_bind_and_release() {
    let forks = host::size(200, 2_000).to_string();
    let outcome = host::run(host::host("fork").arg(&forks), Duration::from_secs(300));
    outcome.assert_ok();
    assert_eq!(outcome.get("forks"), Some(forks.as_str()));
    assert!(outcome.number("max_child_seconds") < 5.0);
    assert!(outcome.number("churn_binds") > 0.0 && outcome.number("churn_per_call") > 0.0);
    assert_eq!(outcome.number("contexts_bound"), 1.0, "{outcome}");
}
