//! A `fork` from inside a foreground init while a background init runs on
//! another thread: the child goes on with the foreground init (its thread
//! is the child's one thread), but the background one has no thread there,
//! so once outside init code the child's gated callbacks fail at once
//! instead of waiting forever. The parent is unaffected.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use callgate::__private::{self as cg, Failure};
use callgate::InitState;
use callgate_dev::gated;

static FINISH_BACKGROUND: AtomicBool = AtomicBool::new(false);
/// The child's pid, in the parent.
static CHILD: AtomicI32 = AtomicI32::new(0);

fn slow_background() -> Result<(), Failure> {
    while !FINISH_BACKGROUND.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

/// What the child checks, from inside the foreground init it inherited.
fn child_status() -> i32 {
    // Init code passes the gate, in the child as in the parent.
    if gated(5) != 5 {
        return 1;
    }
    if !matches!(callgate::init_state(), InitState::Failed(message) if message.contains("forked")) {
        return 2;
    }
    // Code outside init, on another thread, fails fast with the reason.
    let other = std::thread::spawn(|| {
        callgate::clear_last_error();
        (gated(6), callgate::last_error().unwrap_or_default())
    });
    match other.join() {
        Ok((-1, message)) if message.contains("forked") => 0,
        Ok(_) => 3,
        Err(_) => 4,
    }
}

fn forking_foreground() -> Result<(), Failure> {
    // SAFETY: the child runs its checks and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let status = child_status();
        // SAFETY: `_exit` ends the child without running the parent's
        // atexit handlers or flushing its buffers.
        unsafe { libc::_exit(status) }
    }
    CHILD.store(pid, Ordering::SeqCst);
    Ok(())
}

#[test]
fn a_child_forked_by_a_foreground_init_loses_the_background_one() {
    crate::child::alone(|| {
        cg::run_init("slow_background", true, slow_background);
        cg::run_init("forking_foreground", false, forking_foreground);
        let status = callgate_dev::wait_for_child(
            CHILD.load(Ordering::SeqCst),
            Duration::from_secs(10),
            "the child waited at the gate for an init it cannot finish",
        );
        assert_eq!(status, 0, "child check failed (see `child_status`)");

        // The parent's inits go on and finish normally.
        assert_eq!(callgate::init_state(), InitState::Pending);
        FINISH_BACKGROUND.store(true, Ordering::SeqCst);
        assert_eq!(gated(7), 7);
        assert_eq!(callgate::init_state(), InitState::Ready);
    });
}
