//! A `fork` from inside a background init, the only init pending: in the
//! child the forking thread is that init's, which goes on and finishes
//! there, so the child's gate opens as the parent's does. (Had the child
//! failed its gate for every pending background init, it would refuse
//! calls its own init is about to allow.)

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use callgate::__private::{self as cg, Failure};
use callgate::InitState;
use callgate_dev::gated;

/// The child's pid, in the parent; -1 until the init forked.
static CHILD: AtomicI32 = AtomicI32::new(-1);

fn forking_background() -> Result<(), Failure> {
    // SAFETY: the child starts one thread and returns from the init; that
    // thread `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        std::thread::spawn(callgate_dev::exit_after_gate_check);
        // Give the checker time to reach the gate before it opens (it
        // passes either way once the init has finished).
        std::thread::sleep(Duration::from_millis(50));
        return Ok(());
    }
    CHILD.store(pid, Ordering::SeqCst);
    Ok(())
}

#[test]
fn a_child_forked_by_its_one_background_init_finishes_it() {
    crate::child::alone(|| {
        cg::run_init("forking_background", true, forking_background);
        let deadline = Instant::now() + Duration::from_secs(10);
        let pid = loop {
            match CHILD.load(Ordering::SeqCst) {
                -1 if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
                -1 => panic!("the background init did not fork"),
                pid => break pid,
            }
        };
        let status = callgate_dev::wait_for_child(
            pid,
            Duration::from_secs(10),
            "the child's gate never opened",
        );
        assert_eq!(
            status, 0,
            "child check failed (see `exit_after_gate_check`)"
        );
        assert_eq!(gated(7), 7);
        assert_eq!(callgate::init_state(), InitState::Ready);
    });
}
