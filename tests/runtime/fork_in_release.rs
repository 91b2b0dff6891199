//! A `fork` from inside a `Local::release`: the context whose values are
//! being released has left the thread's slot but is still the forking
//! thread's, and in the child that thread goes on with the release. The
//! child must not also hand the context back as an orphan, or two of its
//! threads would run on one context.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use callgate::{Local, c_callback};
use callgate_dev::{Hold, call_from_c};

/// Set by the test: the next release forks.
static FORK_IN_RELEASE: AtomicBool = AtomicBool::new(false);
/// The child's pid, in the parent; 0 in the child.
static CHILD: AtomicI32 = AtomicI32::new(-1);
static HOLD: Hold = Hold::new();

#[derive(Default)]
struct Forker;

impl Local for Forker {
    fn release(&mut self) {
        if FORK_IN_RELEASE.swap(false, Ordering::SeqCst) {
            // SAFETY: the child returns through the runtime to the test,
            // which runs its checks and `_exit`s.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            CHILD.store(pid, Ordering::SeqCst);
        }
    }
}

/// Served per call, so that every call ends with its context's release.
#[c_callback(attach = per_call, on_error = -1)]
fn add_one(#[local] _forker: &mut Forker, x: i32) -> i32 {
    x + 1
}

/// As `add_one`, holding its call until the test releases it.
#[c_callback(attach = per_call, on_error = -1)]
fn add_one_held(#[local] _forker: &mut Forker, x: i32) -> i32 {
    HOLD.hold();
    x + 1
}

/// The child's checks: a thread holds a call while this one, which forked
/// in the release, calls; each runs on a context of its own.
fn child_status() -> i32 {
    let other = std::thread::spawn(|| call_from_c(add_one_held, 6));
    HOLD.wait_until_holding();
    let here = call_from_c(add_one, 6);
    HOLD.release();
    match (here, other.join()) {
        (7, Ok(7)) => 0,
        (7, _) => 1,
        _ => 2,
    }
}

#[test]
fn a_fork_in_a_release_leaves_the_context_to_the_forking_thread() {
    crate::child::alone(|| {
        FORK_IN_RELEASE.store(true, Ordering::SeqCst);
        assert_eq!(call_from_c(add_one, 1), 2);
        if CHILD.load(Ordering::SeqCst) == 0 {
            let status = child_status();
            // SAFETY: `_exit` ends the child without running the parent's
            // atexit handlers or flushing its buffers.
            unsafe { libc::_exit(status) }
        }
        let status = callgate_dev::wait_for_child(
            CHILD.load(Ordering::SeqCst),
            Duration::from_secs(10),
            "the child hung",
        );
        assert_eq!(status, 0, "child check failed (see `child_status`)");
        // The parent goes on as before.
        assert_eq!(call_from_c(add_one, 2), 3);
    });
}
