//! Deep C → Rust → C → Rust nesting on one thread, and callbacks from small
//! and foreign stacks, driven by a C program that `dlopen`s the fixture.

use crate::host;

use std::time::Duration;

fn depth(args: &[&str]) -> host::Outcome {
    let outcome = host::run(host::host("depth").args(args), Duration::from_secs(60));
    outcome.assert_ok();
    outcome
}

/// 1 000 levels (10 000 with `CALLGATE_FULL=1`) of C → Rust → C, every level
/// checking it runs on the same context: one bind, nothing released inside
/// the nest or at its return, exactly one release when the thread exits;
/// `Local::bind`/`release` once each.
#[test]
fn bound_nesting_uses_one_context_released_once_at_thread_exit() {
    let levels = host::size(1_000, 10_000).to_string();
    let outcome = depth(&["nest", &levels]);
    let per_level = outcome.number("stack_bytes_per_level");
    println!("stack per level: {per_level} bytes");
    // The debug build's level takes about 2 KiB: 4 or more means the call
    // path was forced inline in unoptimised code (a user's `dev` build
    // with callgate optimised, `[profile.dev.package."*"] opt-level = 3`:
    // the `mixed-profile` row).
    if !host::emulated() {
        let most = if host::fixture_is_release() {
            1024.0
        } else {
            3072.0
        };
        assert!(
            per_level <= most,
            "{per_level} bytes of stack per level, at most {most} expected"
        );
    }
    assert_eq!(outcome.get("levels"), Some(levels.as_str()));
    assert_eq!(outcome.number("binds_during"), 1.0);
    assert_eq!(outcome.number("releases_at_return"), 0.0);
    assert_eq!(outcome.number("releases_at_exit"), 1.0);
    assert_eq!(outcome.number("token_releases"), 1.0);
}

/// The same with `attach = per_call`: one attachment for the whole nest,
/// released exactly once, at the outermost return.
#[test]
fn per_call_nesting_is_released_only_at_the_outermost_return() {
    let levels = host::size(1_000, 10_000).to_string();
    let outcome = depth(&["nest-per-call", &levels]);
    assert_eq!(outcome.get("levels"), Some(levels.as_str()));
    assert_eq!(outcome.number("binds_during"), 1.0);
    assert_eq!(outcome.number("releases_at_return"), 1.0);
    assert_eq!(outcome.number("releases_at_exit"), 1.0);
    assert_eq!(outcome.number("token_releases"), 1.0);
}

/// A thread with a 64 KiB stack (or the C library's least, where that is
/// more: 128 KiB on aarch64 glibc) binds, uses `#[local]` state, gets an
/// `Err` and a caught panic back as fallbacks, and nests 20 deep (in a
/// debug build about 37 KiB of stack: see the guide's "Any C thread can
/// call").
#[test]
fn callbacks_work_from_a_64_kib_stack_thread() {
    let outcome = depth(&["small-stack", "64"]);
    let least = outcome.number("stack_min_kib");
    assert_eq!(outcome.number("stack_kib"), least.max(64.0), "{outcome}");
}

/// A thread that nests C → Rust → C without end on a 64 KiB stack (the C
/// library's least where that is more) overflows it: the process dies of
/// SIGSEGV, as a C program that recurses without end does, and nothing
/// returns into C. Neither Rust nor callgate catches a stack overflow (see
/// Known limits in the guide).
#[test]
fn a_stack_overflow_in_a_nest_of_callbacks_kills_the_process_with_sigsegv() {
    let outcome = host::run(
        host::host("depth").args(["overflow", "64"]),
        Duration::from_secs(60),
    );
    assert_eq!(outcome.signal(), Some(libc::SIGSEGV), "{outcome}");
    assert_eq!(outcome.get("overflow_started"), Some("1"), "{outcome}");
    assert_eq!(outcome.get("overflow_returned"), None, "{outcome}");
}

/// The same from a 64 KiB `makecontext` stack, switched to and from with
/// `swapcontext`: the thread keeps one context whichever stack calls.
#[test]
fn callbacks_work_from_a_swapcontext_stack() {
    let outcome = depth(&["swapcontext", "64"]);
    assert_eq!(outcome.number("coroutine_stack_kib"), 64.0);
}

/// A callback holding its `#[local]` value, suspended on a coroutine stack
/// below the thread's own (its C callee switches back with `swapcontext`),
/// while the thread's own stack calls in: the suspended call is still
/// running, so the value stays held ("already in use"), a callback without
/// `#[local]` works, and once resumed the call returns and the value is
/// free again. Below the new call, on a stack that is not the thread's,
/// only the suspended call's token tells it from a call that is gone.
#[test]
fn a_call_suspended_on_a_coroutine_stack_keeps_its_local_value() {
    let outcome = depth(&["suspended", "64"]);
    assert_eq!(outcome.number("token_while_suspended"), -1.0, "{outcome}");
    let error = outcome.get("error_while_suspended").unwrap_or_default();
    assert!(error.contains("already in use"), "{outcome}");
    assert_eq!(outcome.number("held_result_is_own"), 1.0, "{outcome}");
    assert_eq!(outcome.number("token_after_is_own"), 1.0, "{outcome}");
}

/// Callbacks on one thread that finish out of order (green threads on
/// coroutine stacks): a callback holds its `#[local]` value, suspended,
/// while the callback it started under, on another stack, returns first
/// (a nested one on a coroutine; then the outermost one, on a coroutine,
/// with the holder on the thread's own stack). The suspended call still
/// runs: its value stays held until it returns.
#[test]
fn a_suspended_call_outliving_the_call_it_started_under_keeps_its_local_value() {
    let outcome = depth(&["interleaved", "64"]);
    // Asked for by `token` (the line's name), the value was refused with
    // "already in use" (the `error` line's text).
    let refused = |token: &str, error: &str| {
        assert_eq!(outcome.number(token), -1.0, "{outcome}");
        let message = outcome.get(error).unwrap_or_default();
        assert!(message.contains("already in use"), "{outcome}");
    };
    let yes = |line: &str| assert_eq!(outcome.number(line), 1.0, "{outcome}");
    refused("token_while_outliving", "error_while_outliving");
    yes("outliving_result_is_own");
    yes("token_after_outliving_is_own");
    // The other order: the thread's outermost call, on a coroutine,
    // returns while the callback it started on the thread's own stack is
    // suspended holding the value.
    refused(
        "token_after_outermost_returned",
        "error_after_outermost_returned",
    );
    yes("inner_result_is_own");
    yes("token_after_inner_is_own");
    // Per call: the outermost call's return keeps the context on the
    // thread while the value is held, until the thread exits.
    refused(
        "per_call_token_while_outliving",
        "per_call_error_while_outliving",
    );
    yes("per_call_held_is_after");
    assert_eq!(
        outcome.number("per_call_bound_after_exit"),
        0.0,
        "{outcome}"
    );
    assert_eq!(
        outcome.number("per_call_binds"),
        outcome.number("per_call_releases"),
        "{outcome}"
    );
    // Per call, with the suspended callback holding nothing: it may still
    // resume on the context, which stays on the thread (not released to
    // another) until the thread exits.
    assert_eq!(
        outcome.number("plain_bound_while_suspended"),
        1.0,
        "{outcome}"
    );
    assert_eq!(
        outcome.number("plain_releases_while_suspended"),
        0.0,
        "{outcome}"
    );
    assert_eq!(outcome.number("plain_bound_after_exit"), 0.0, "{outcome}");
    assert_eq!(
        outcome.number("plain_binds"),
        outcome.number("plain_releases"),
        "{outcome}"
    );
    // The same where the outermost call was left by `longjmp`: the
    // thread's next call drops the suspended call's record with it, and
    // the context still stays on the thread until it exits.
    assert_eq!(
        outcome.number("abandoned_bound_while_suspended"),
        1.0,
        "{outcome}"
    );
    assert_eq!(
        outcome.number("abandoned_releases_while_suspended"),
        0.0,
        "{outcome}"
    );
    assert_eq!(
        outcome.number("abandoned_bound_after_exit"),
        0.0,
        "{outcome}"
    );
    assert_eq!(
        outcome.number("abandoned_binds"),
        outcome.number("abandoned_releases"),
        "{outcome}"
    );
}

/// Tasks on coroutine stacks of one thread (green threads), switched at
/// random inside and outside callbacks that hold the thread's `#[local]`
/// value, inside calls nested in them, and from callbacks on the thread's
/// own stack, so callbacks finish in any order: a value is never handed
/// to two calls at once (each holder checks it had the value to itself),
/// every refusal says "already in use", the value is free once every task
/// ended, and each thread's context is released once. 200 threads of 6
/// tasks (2 000 with `CALLGATE_FULL=1`), each with its own seed. (The
/// runtime before holds were judged by their holders' marks handed the
/// value out twice about 6 700 times in 20 threads.)
/// A callback abandoned by `longjmp` on a coroutine's stack, which is then
/// unmapped: the next callback nested in the same outermost call judges the
/// abandoned one without reading its frame (it used to fault there).
#[test]
fn a_call_abandoned_on_a_freed_coroutine_stack_is_not_read() {
    let outcome = depth(&["freed-coroutine", "64"]);
    outcome.assert_ok();
    assert_eq!(outcome.number("nested_after_unmap"), 42.0);
    assert_eq!(outcome.number("plain_after"), 2.0);
}

#[test]
fn green_threads_switched_at_random_never_share_a_local_value() {
    let rounds = host::size(200, 2_000);
    let outcome = depth(&["green-storm", &rounds.to_string()]);
    assert_eq!(outcome.number("aliased"), 0.0, "{outcome}");
    assert_eq!(outcome.number("failed"), 0.0, "{outcome}");
    assert!(outcome.number("alone") > 0.0, "{outcome}");
    assert!(outcome.number("refused") > 0.0, "{outcome}");
    assert_eq!(outcome.number("free_at_end"), rounds as f64, "{outcome}");
    assert_eq!(outcome.number("bound_after"), 0.0, "{outcome}");
    assert_eq!(outcome.number("binds"), rounds as f64, "{outcome}");
    assert_eq!(outcome.number("releases"), rounds as f64, "{outcome}");
}
