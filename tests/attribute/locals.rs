//! `#[local]` parameters, driven from C threads: one value per thread, kept
//! across calls, and a re-entrant call for the same value is an error rather
//! than a second `&mut`.

use std::sync::atomic::{AtomicI64, Ordering};

use callgate::{Local, c_callback};
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn m_run_threads(
        cb: extern "C" fn(i64) -> i64,
        threads: i32,
        calls: i32,
        first: *mut i64,
        last: *mut i64,
    ) -> i32;
    fn m_call_i32(cb: extern "C" fn(i32) -> i32, value: i32) -> i32;
}

#[derive(Default)]
pub struct Tally {
    calls: i64,
}

impl Local for Tally {}

/// Counts this thread's calls; returns the count.
#[c_callback(on_error = -1)]
fn count(#[local] tally: &mut Tally, _thread: i64) -> i64 {
    tally.calls += 1;
    tally.calls
}

#[derive(Default)]
pub struct Marker {
    _byte: u8,
}

impl Local for Marker {}

/// Returns the address of this thread's `Marker`.
#[c_callback(on_error = -1)]
fn marker_address(#[local] marker: &mut Marker, _thread: i64) -> i64 {
    marker as *mut Marker as i64
}

fn call(cb: extern "C" fn(i32) -> i32, value: i32) -> i32 {
    // SAFETY: `cb` is a valid callback.
    unsafe { m_call_i32(cb, value) }
}

fn run_threads(cb: extern "C" fn(i64) -> i64, threads: usize, calls: i32) -> (Vec<i64>, Vec<i64>) {
    let (mut first, mut last) = (vec![0; threads], vec![0; threads]);
    // SAFETY: both vectors hold `threads` entries; `cb` stays valid.
    let rc = unsafe {
        m_run_threads(
            cb,
            threads as i32,
            calls,
            first.as_mut_ptr(),
            last.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "the C harness could not create its threads");
    (first, last)
}

#[test]
fn a_local_keeps_its_value_across_calls_on_one_thread() {
    let (first, last) = run_threads(count, 4, 50);
    for (first, last) in first.iter().zip(&last) {
        // A recycled context may bring a value an earlier thread used; from
        // there on this thread counts every one of its calls.
        assert!(*first >= 1);
        assert_eq!(last - first, 49);
    }
}

#[test]
fn threads_alive_at_once_have_distinct_locals() {
    let threads = 6;
    let (first, last) = run_threads(marker_address, threads, 20);
    assert_eq!(first, last, "each thread sees one value for all its calls");
    let mut addresses = first.clone();
    addresses.sort_unstable();
    addresses.dedup();
    assert!(first.iter().all(|&address| address > 0), "{first:?}");
    assert_eq!(
        addresses.len(),
        threads,
        "every thread has its own value: {first:?}"
    );
}

#[derive(Default)]
pub struct Depth {
    value: i32,
}

impl Local for Depth {}

/// Calls itself through C while holding its `#[local]`.
#[c_callback(on_error = -1)]
extern "C" fn reenter(#[local] depth: &mut Depth, nested: i32) -> i32 {
    depth.value += 1;
    if nested == 0 {
        return depth.value;
    }
    let inner = call(reenter, nested - 1);
    depth.value += 1;
    inner
}

#[derive(Default)]
pub struct Other {
    hits: i32,
}

impl Local for Other {}

#[c_callback(on_error = -1)]
fn other_local(#[local] other: &mut Other, _: i32) -> i32 {
    other.hits += 1;
    other.hits
}

/// Holds a `Depth` and, inside, calls a callback that takes a different
/// `#[local]`: that one is fine.
#[c_callback(on_error = -1)]
fn hold_and_call_other(#[local] depth: &mut Depth, _: i32) -> i32 {
    depth.value += 1;
    call(other_local, 0)
}

/// `reenter(1)` on this thread: the inner call is refused `Depth` (the
/// outer call holds it), with a message that says so.
fn assert_inner_call_refused() {
    callgate::clear_last_error();
    assert_eq!(call(reenter, 1), -1, "the inner call cannot have `Depth`");
    let message = callgate::last_error().expect("the inner call set an error");
    assert!(
        message.contains("already in use by an outer call"),
        "{message}"
    );
    assert!(message.contains("Depth"), "{message}");
}

#[test]
fn reentrant_use_of_the_same_local_is_an_error() {
    std::thread::spawn(|| {
        assert_inner_call_refused();
        // The outer call kept its value and went on.
        assert_eq!(call(reenter, 0), 3);
        assert_eq!(call(hold_and_call_other, 0), 1);
        // Now the thread is bound and the value ready, so the outer call
        // takes the fast path, which records its hold in the context
        // rather than in the value: the inner call is refused all the same.
        assert_inner_call_refused();
        // Outer: 4 (hold_and_call_other) + 1 before and 1 after the inner
        // call; the hold ended with the call.
        assert_eq!(call(reenter, 0), 7);
        assert_eq!(call(hold_and_call_other, 0), 2);
    })
    .join()
    .unwrap();
}

/// Two `Local` types whose values say which type they are and count the
/// calls of the thread they serve.
#[derive(Default)]
pub struct Left {
    calls: i64,
}

impl Local for Left {}

#[derive(Default)]
pub struct Right {
    calls: i64,
}

impl Local for Right {}

/// `Left` before `Right`: counts this call in both; 1 if they agree.
#[c_callback(on_error = -1)]
fn left_then_right(#[local] left: &mut Left, #[local] right: &mut Right, _: i64) -> i64 {
    left.calls += 1;
    right.calls += 2;
    i64::from(right.calls == 2 * left.calls)
}

/// `Right` before `Left`, with a value parameter between them.
#[c_callback(on_error = -1)]
fn right_then_left(#[local] right: &mut Right, _: i64, #[local] left: &mut Left) -> i64 {
    left.calls += 1;
    right.calls += 2;
    i64::from(right.calls == 2 * left.calls)
}

/// Alternates the two orders (the thread number decides which comes first
/// on a thread): each type must always find its own value. Called by the
/// C threads directly; the callbacks it calls are the outermost ones.
extern "C" fn either_order(thread: i64) -> i64 {
    static CALLS: AtomicI64 = AtomicI64::new(0);
    // Relaxed: only spreads the orders over the calls.
    let n = CALLS.fetch_add(1, Ordering::Relaxed) + thread;
    if n % 2 == 0 {
        left_then_right(thread)
    } else {
        right_then_left(thread)
    }
}

#[test]
fn two_local_types_in_either_order_from_many_threads_keep_their_values() {
    let (first, last) = run_threads(either_order, 8, 2_000);
    assert!(first.iter().all(|&agree| agree == 1), "{first:?}");
    assert!(last.iter().all(|&agree| agree == 1), "{last:?}");
}

static BINDS: AtomicI64 = AtomicI64::new(0);
static RELEASES: AtomicI64 = AtomicI64::new(0);

/// Counts its binds and releases, here and process-wide.
#[derive(Default)]
pub struct Counted {
    binds: i64,
    releases: i64,
}

impl Local for Counted {
    fn bind(&mut self) {
        self.binds += 1;
        // Relaxed: statistics, read after the threads were joined.
        BINDS.fetch_add(1, Ordering::Relaxed);
    }

    fn release(&mut self) {
        self.releases += 1;
        // Relaxed: as above.
        RELEASES.fetch_add(1, Ordering::Relaxed);
    }
}

/// Bound for the call only: 1 when the value was bound once more than it
/// was released, as it must be inside every call.
#[c_callback(attach = per_call, on_error = -1)]
fn per_call_counted(#[local] counted: &mut Counted, _: i64) -> i64 {
    i64::from(counted.binds == counted.releases + 1)
}

#[test]
fn a_per_call_local_is_bound_and_released_around_every_call() {
    let (first, last) = run_threads(per_call_counted, 4, 500);
    assert!(
        first.iter().chain(&last).all(|&ok| ok == 1),
        "{first:?} {last:?}"
    );
    // Relaxed: the threads were joined.
    let binds = BINDS.load(Ordering::Relaxed);
    assert_eq!(binds, 4 * 500);
    assert_eq!(RELEASES.load(Ordering::Relaxed), binds);
}
