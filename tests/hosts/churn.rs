//! Thread churn and bursts from C threads of a separate program that loads
//! the fixture with `dlopen`: contexts are recycled, never leaked, and the
//! process's memory stays flat.

use crate::host;

use std::time::Duration;

/// How many threads a churn test creates: 10 000, or 100 000 with
/// `CALLGATE_FULL=1`, but never more than 10 000 under an emulator, where
/// qemu-user's memory grows with every thread that ever ran (100 000 would
/// take about 28 GiB).
fn churn_threads() -> u64 {
    if host::emulated() {
        10_000
    } else {
        host::size(10_000, 100_000)
    }
}

/// The churn host in `mode` with `threads` threads in waves of 8; without
/// its RSS check under an emulator (see [`host::emulated`]).
fn churn(mode: &str, threads: u64) -> host::Outcome {
    let mut command = host::host("churn");
    command.args([mode, &threads.to_string(), "8"]);
    if host::emulated() {
        command.arg("no-rss");
    }
    host::run(&mut command, Duration::from_secs(600))
}

/// 100 000 threads (10 000 in CI and under an emulator) created and joined
/// in waves of 8, each making 2-4 calls: contexts created ≤ 8 + 2, none
/// bound at the end, `Local::bind`/`release` balanced, RSS at the end ≤ RSS
/// after the first wave + 4 MiB (all checked by the host; repeated here on
/// its numbers; the RSS not under an emulator).
#[test]
fn churn_in_waves_of_8_recycles_contexts_and_keeps_memory_flat() {
    let threads = churn_threads();
    let outcome = churn("churn", threads);
    outcome.assert_ok();
    assert!(outcome.number("contexts_created_during_run") <= 10.0);
    assert_eq!(outcome.number("contexts_bound"), 0.0);
    assert_eq!(
        outcome.number("token_binds"),
        outcome.number("token_releases")
    );
    if !host::emulated() {
        assert!(outcome.number("rss_end_kib") <= outcome.number("rss_first_wave_kib") + 4096.0);
    }
}

/// The same churn with the 8 threads of each wave alive at once (they start
/// together and none exits before all have called): 8 contexts in use at
/// the peak, still at most 8 + 2 created for all the threads.
#[test]
fn churn_in_waves_of_8_live_threads_creates_at_most_10_contexts() {
    let threads = churn_threads();
    let outcome = churn("together", threads);
    outcome.assert_ok();
    let created = outcome.number("contexts_created_during_run");
    assert!((7.0..=10.0).contains(&created), "{outcome}");
    assert_eq!(outcome.number("contexts_bound"), 0.0);
}

/// 256 threads make their first call at the same instant (a barrier): no
/// deadlock, every call succeeds, live threads never share a context.
#[test]
fn burst_of_256_simultaneous_first_calls() {
    let rounds = host::size(3, 20);
    for _ in 0..rounds {
        let outcome = host::run(
            host::host("churn").args(["burst", "256"]),
            Duration::from_secs(60),
        );
        outcome.assert_ok();
        assert_eq!(outcome.number("contexts_bound"), 0.0);
        assert!(outcome.number("contexts_created_during_run") <= 256.0);
    }
}
