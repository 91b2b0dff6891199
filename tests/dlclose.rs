//! `dlclose` of the fixture while C threads bound to it are alive, and
//! loading it again, from a C program.

mod host;

use std::time::Duration;

fn dlclose(args: &[&str], fixture_init: Option<&str>) -> host::Outcome {
    let mut command = host::host("dlclose");
    command.args(args);
    if let Some(value) = fixture_init {
        command.env("FIXTURE_INIT", value);
    }
    host::run(&mut command, Duration::from_secs(120))
}

/// 3 rounds (50 with `CALLGATE_FULL=1`) of: load, bind 8 threads, `dlclose`
/// while they are alive, let them exit (callgate's key destructor runs in
/// the closed library: no crash because bound threads pin it), load again,
/// call from new threads. The contexts of the exited threads come back and
/// are reused across rounds.
#[test]
fn dlclose_with_live_bound_threads_then_reload() {
    let rounds = host::size(3, 50).to_string();
    let outcome = dlclose(&["live", &rounds], None);
    outcome.assert_ok();
    assert_eq!(outcome.get("pinned_rounds"), Some(rounds.as_str()));
}

/// Per-call callbacks only (nothing pins the library): `dlclose` then
/// `dlopen` works every round.
#[test]
fn dlclose_without_bound_threads_then_reload() {
    let rounds = host::size(3, 50).to_string();
    dlclose(&["unbound", &rounds], Some("none")).assert_ok();
}

/// Such a library really unloads: the background init's thread is started
/// with `pthread_create`, so nothing registers a thread-local destructor on
/// the `dlopen`ing thread (which would make glibc keep the object until that
/// thread exits).
#[test]
fn dlclose_without_bound_threads_unloads() {
    dlclose(&["unbound", "2", "require-unload"], Some("none")).assert_ok();
}
