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
/// `dlopen` works every round. glibc does not reuse an unloaded library's
/// static TLS, so in the later rounds the fixture's TLS block is in dynamic
/// TLS, and each new thread's first call makes the TLS descriptor's
/// resolver allocate the thread's block with `malloc`: no call of `malloc`
/// (checked by the host) may find the stack misaligned, as it did when the
/// cold dynamic-TLS entry called the resolver without a frame (a crash
/// where glibc's code stored vector registers to the stack).
#[test]
fn dlclose_without_bound_threads_then_reload() {
    let rounds = host::size(12, 50).to_string();
    let outcome = dlclose(&["unbound", &rounds], Some("none"));
    outcome.assert_ok();
    assert!(
        outcome.number("dynamic_tls_threads") >= 8.0,
        "no round had the fixture in dynamic TLS\n{outcome}"
    );
    // The check is x86-64's (its stack alignment rule), compiled into
    // x86-64 hosts only: emulated hosts are aarch64.
    if !host::emulated() {
        assert_eq!(outcome.number("malloc_checked"), 1.0, "{outcome}");
    }
    assert_eq!(outcome.number("misaligned_mallocs"), 0.0, "{outcome}");
}

/// Such a library really unloads: the background init's thread is started
/// with `pthread_create`, so nothing registers a thread-local destructor on
/// the `dlopen`ing thread (which would make glibc keep the object until that
/// thread exits).
#[test]
fn dlclose_without_bound_threads_unloads() {
    dlclose(&["unbound", "2", "require-unload"], Some("none")).assert_ok();
}
