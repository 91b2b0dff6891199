//! A `fork` while a background init is still running on another thread:
//! the child cannot finish that init, so its gated callbacks fail at once
//! with a message instead of waiting forever; the parent is unaffected.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use callgate::__private::{self as cg, Failure};
use callgate::InitState;
use callgate_dev::gated;

static FINISH_INIT: AtomicBool = AtomicBool::new(false);

fn slow_init() -> Result<(), Failure> {
    while !FINISH_INIT.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// What the child does: only async-signal-tolerant work and `_exit`.
fn child() -> ! {
    let status = if gated(5) != -1 {
        1
    } else if !callgate::last_error().is_some_and(|message| message.contains("forked")) {
        2
    } else if !matches!(callgate::init_state(), InitState::Failed(_)) {
        3
    } else {
        0
    };
    // SAFETY: `_exit` ends the child without running the parent's atexit
    // handlers or flushing its buffers.
    unsafe { libc::_exit(status) }
}

#[test]
fn a_child_forked_during_a_background_init_fails_fast() {
    crate::child::alone(|| {
        cg::run_init("slow_init", true, slow_init);
        assert_eq!(callgate::init_state(), InitState::Pending);

        // SAFETY: the child only calls a callback and `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            child();
        }
        let status = callgate_dev::wait_for_child(
            pid,
            Duration::from_secs(10),
            "the child waited at the gate instead of failing fast",
        );
        assert_eq!(status, 0, "child check failed (see `child`)");

        // The parent's init goes on and finishes normally.
        assert_eq!(callgate::init_state(), InitState::Pending);
        FINISH_INIT.store(true, Ordering::SeqCst);
        assert_eq!(gated(7), 7);
        assert_eq!(callgate::init_state(), InitState::Ready);
    });
}
