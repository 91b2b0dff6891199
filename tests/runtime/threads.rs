//! Thread contexts from real C threads: binding, reuse, release at exit.
//!
//! The callbacks here are hand-written trampolines over callgate's hidden
//! runtime API, so these tests exercise the runtime alone. Each compares
//! the process's statistics before and after, or holds many threads, so
//! each runs in a process of its own (`crate::child`).

use callgate::__private::{self as cg, Attach, GatePolicy, Site};
use callgate_dev::{
    Spawn, call_from_c, calls_from_late_key_destructor, run_threads, sequential_threads, site,
};

/// Returns the id of the context the call runs on.
extern "C" fn context_id(_: i32) -> i32 {
    static SITE: Site = site("context_id", Attach::Bound, GatePolicy::Wait);
    cg::call(
        &SITE,
        || -1,
        || -2,
        |_| cg::ok(cg::current_context_id().map_or(-3, |id| id as i32)),
    )
}

/// The same, released when the outermost call returns.
extern "C" fn context_id_per_call(_: i32) -> i32 {
    static SITE: Site = site("context_id_per_call", Attach::PerCall, GatePolicy::Wait);
    cg::call(
        &SITE,
        || -1,
        || -2,
        |_| cg::ok(cg::current_context_id().map_or(-3, |id| id as i32)),
    )
}

/// Calls `context_id` from C inside a callback and checks both ran on the
/// same context.
extern "C" fn nested_context_id(depth: i32) -> i32 {
    static SITE: Site = site("nested_context_id", Attach::Bound, GatePolicy::Wait);
    cg::call(
        &SITE,
        || -1,
        || -2,
        |_| {
            let outer = cg::current_context_id().map_or(-3, |id| id as i32);
            let inner = if depth > 0 {
                call_from_c(nested_context_id, depth - 1)
            } else {
                outer
            };
            cg::ok(if inner == outer { outer } else { -4 })
        },
    )
}

#[test]
fn one_thread_keeps_one_context_for_100_000_calls() {
    crate::child::alone(|| {
        let before = callgate::stats();
        let results = run_threads(context_id, 1, 100_000, Spawn::default());
        let after = callgate::stats();
        assert!(
            results[0].first >= 0,
            "the callback did not run: {}",
            results[0].first
        );
        assert_eq!(
            results[0].changes, 0,
            "the thread changed context between calls"
        );
        assert!(after.contexts_created - before.contexts_created <= 1);
        assert_eq!(after.binds - before.binds, 1, "one bind for the thread");
    });
}

#[test]
fn concurrent_threads_get_distinct_contexts() {
    crate::child::alone(|| {
        let spawn = Spawn {
            start_together: true,
            hold_until_all_called: true,
        };
        let results = run_threads(context_id, 8, 1_000, spawn);
        let mut ids: Vec<i32> = results.iter().map(|r| r.first).collect();
        assert!(ids.iter().all(|&id| id >= 0), "{ids:?}");
        assert!(results.iter().all(|r| r.changes == 0));
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 8, "two live threads shared a context");
    });
}

#[test]
fn short_lived_threads_are_released_before_join_returns() {
    crate::child::alone(|| {
        let before = callgate::stats();
        let results = run_threads(context_id, 100, 10, Spawn::default());
        assert!(results.iter().all(|r| r.first >= 0 && r.changes == 0));
        let after = callgate::stats();
        assert_eq!(
            after.contexts_bound, before.contexts_bound,
            "a joined thread kept its context"
        );
        assert_eq!(after.releases - before.releases, 100);
    });
}

#[test]
fn sixty_four_simultaneous_first_calls_all_bind() {
    crate::child::alone(|| {
        let spawn = Spawn {
            start_together: true,
            hold_until_all_called: true,
        };
        let results = run_threads(context_id, 64, 1, spawn);
        let mut ids: Vec<i32> = results.iter().map(|r| r.first).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 64);
        assert!(callgate::stats().contexts_created >= 64);
    });
}

#[test]
fn ten_thousand_sequential_threads_reuse_contexts() {
    crate::child::alone(|| {
        let before = callgate::stats();
        sequential_threads(context_id, 10_000, 3);
        let after = callgate::stats();
        assert!(
            after.contexts_created - before.contexts_created <= 2,
            "contexts were not reused: {} created",
            after.contexts_created - before.contexts_created
        );
        assert_eq!(after.binds - before.binds, 10_000);
        assert_eq!(after.contexts_bound, before.contexts_bound);
    });
}

#[test]
fn calls_from_a_later_key_destructor_are_served_and_leak_nothing() {
    crate::child::alone(|| {
        let before = callgate::stats();
        let served = calls_from_late_key_destructor(context_id, 1_000, 8);
        let after = callgate::stats();
        assert_eq!(served, 1_000, "a call from a key destructor failed");
        // 8 threads alive at once, each holding at most one context.
        assert!(after.contexts_created - before.contexts_created <= 10);
        assert_eq!(
            after.contexts_bound, before.contexts_bound,
            "a served call leaked its context"
        );
    });
}

#[test]
fn per_call_attachment_releases_at_the_outermost_return() {
    crate::child::alone(|| {
        let before = callgate::stats();
        let results = run_threads(context_id_per_call, 1, 1_000, Spawn::default());
        let after = callgate::stats();
        assert!(results[0].first >= 0);
        assert_eq!(after.binds - before.binds, 1_000);
        assert_eq!(after.releases - before.releases, 1_000);
        assert_eq!(after.contexts_bound, before.contexts_bound);
    });
}

#[test]
fn nested_calls_share_the_thread_context() {
    crate::child::alone(|| {
        let results = run_threads(nested_context_id, 2, 100, Spawn::default());
        assert!(
            results.iter().all(|r| r.first >= 0 && r.changes == 0),
            "{results:?}"
        );
        // Rust → C → Rust, 50 deep, on a Rust-spawned thread.
        let id = std::thread::spawn(|| call_from_c(nested_context_id, 50))
            .join()
            .unwrap();
        assert!(id >= 0, "nesting lost the context: {id}");
    });
}

/// A thread's per-call context stays cached in its slot between calls: one
/// context for all of them, each call still counted as a bind and a
/// release, and nothing bound once the call returned.
#[test]
fn per_call_calls_on_one_thread_reuse_one_context() {
    crate::child::alone(|| {
        let before = callgate::stats();
        let results = run_threads(context_id_per_call, 1, 10_000, Spawn::default());
        let after = callgate::stats();
        assert!(results[0].first >= 0, "{results:?}");
        assert_eq!(results[0].changes, 0, "one context for every call");
        assert!(after.contexts_created - before.contexts_created <= 1);
        assert_eq!(after.binds - before.binds, 10_000);
        assert_eq!(after.releases - before.releases, 10_000);
        assert_eq!(after.contexts_bound, before.contexts_bound);
    });
}

/// Threads that exit with a cached per-call context hand it back: a
/// thousand short threads, one at a time, need one context between them.
#[test]
fn exiting_threads_return_their_cached_per_call_context() {
    crate::child::alone(|| {
        let before = callgate::stats();
        sequential_threads(context_id_per_call, 1_000, 3);
        let after = callgate::stats();
        assert!(
            after.contexts_created - before.contexts_created <= 1,
            "a cached context leaked: {before:?} {after:?}"
        );
        assert_eq!(after.binds - before.binds, 3_000);
        assert_eq!(after.releases - before.releases, 3_000);
        assert_eq!(after.contexts_bound, before.contexts_bound);
    });
}

/// A per-call call, then a bound one on the same thread: the bound call
/// takes the context the per-call one cached, and keeps it.
extern "C" fn per_call_then_bound(_: i32) -> i32 {
    let cached = context_id_per_call(0);
    let detached = cg::current_context_id().is_none();
    let bound = context_id(0);
    let kept = cg::current_context_id() == Some(bound as u32);
    i32::from(cached >= 0 && detached && bound == cached && kept)
}

#[test]
fn a_bound_call_takes_the_context_a_per_call_call_cached() {
    crate::child::alone(|| {
        let before = callgate::stats();
        let results = run_threads(per_call_then_bound, 4, 1, Spawn::default());
        let after = callgate::stats();
        assert!(results.iter().all(|r| r.first == 1), "{results:?}");
        // Each thread: one per-call attach and release, then one bound attach
        // released at exit.
        assert_eq!(after.binds - before.binds, 4 * 2);
        assert!(after.contexts_created - before.contexts_created <= 4);
    });
}
