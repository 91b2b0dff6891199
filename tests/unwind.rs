//! Unwinding out of a callback's TLS descriptor call in dynamic TLS, from a
//! C program: a profiler's or debugger's walk of the stack, started inside
//! glibc's resolver, reaches the callback's caller.

mod host;

use std::time::Duration;

/// The fixture in dynamic TLS, `plain` called in a loop under an
/// `ITIMER_PROF` storm whose handler takes a backtrace (glibc's, through the
/// unwind tables): every sample taken inside the dynamic linker's resolver
/// ends in the frames below the loop. The trampolines call the resolver
/// from instructions of their own that move the stack pointer; without
/// their unwind rows every such walk goes astray (checked against a build
/// without them: 60 of 60 samples in the resolver broken).
#[test]
fn a_backtrace_from_inside_the_tls_resolver_reaches_the_caller() {
    let mut command = host::host("unwind");
    command
        .env("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=0")
        .env("CALLGATE_EXPECT_DYNAMIC_TLS", "1");
    let outcome = host::run(&mut command, Duration::from_secs(120));
    outcome.assert_ok();
    assert!(
        outcome.number("in_resolver") >= 20.0,
        "too few samples in the resolver to tell\n{outcome}"
    );
    assert_eq!(outcome.number("broken"), 0.0, "{outcome}");
}
