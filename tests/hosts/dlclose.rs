//! `dlclose` of the fixture while C threads bound to it are alive, and
//! loading it again, from a C program.

use crate::host;

use std::process::Command;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

fn dlclose(args: &[&str], fixture_init: Option<&str>) -> host::Outcome {
    host::run(&mut dlclose_command(args, fixture_init), TIMEOUT)
}

fn dlclose_command(args: &[&str], fixture_init: Option<&str>) -> Command {
    let mut command = host::host("dlclose");
    command.args(args);
    if let Some(value) = fixture_init {
        command.env("FIXTURE_INIT", value);
    }
    command
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
///
/// glibc's reserve of static TLS for `dlopen` is cut from 512 bytes to 128,
/// so that which rounds find room there does not depend on the size of the
/// fixture's TLS block: 96 bytes in a release build, 40 with fat LTO, which
/// left room for all 12 rounds in the full reserve.
#[test]
fn dlclose_without_bound_threads_then_reload() {
    let rounds = host::size(12, 50).to_string();
    let mut command = dlclose_command(&["unbound", &rounds], Some("none"));
    // Not over the reserve of 0 that the dynamic-TLS pass sets.
    if std::env::var_os("CALLGATE_TEST_DYNAMIC_TLS").is_none() {
        command.env("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=128");
    }
    let outcome = host::run(&mut command, TIMEOUT);
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
