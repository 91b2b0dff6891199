//! `fork` from inside a background init while other threads keep asking
//! the gate: two threads call a `gate = fail` callback and `init_state()`
//! in a loop for as long as the init runs, and the init forks again and
//! again. In each child the forking thread is the init's, which goes on
//! and finishes there while a thread of the child waits at the gate: the
//! init's end and the wait must not block on anything a thread the child
//! does not have held at the fork.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use callgate::__private::{self as cg, Attach, Failure, GatePolicy, Site};
use callgate::InitState;
use callgate_dev::{gated, site};

/// Forks the init makes.
const FORKS: usize = 300;

/// Set once the init stopped forking: the askers stop.
static DONE: AtomicBool = AtomicBool::new(false);
/// Calls the askers made that the closed gate turned away.
static TURNED_AWAY: AtomicU64 = AtomicU64::new(0);

/// A bound callback behind the gate with `gate = fail`: returns its
/// argument, or -1 at once while an init is pending.
extern "C" fn fail_fast(x: i32) -> i32 {
    static SITE: Site = site("fail_fast", Attach::Bound, GatePolicy::Fail);
    cg::call(&SITE, || -1, || -2, |_| cg::ok(x))
}

/// Stops the askers when dropped: when the init returns, fails or panics.
struct StopAsking;

impl Drop for StopAsking {
    fn drop(&mut self) {
        DONE.store(true, Ordering::SeqCst);
    }
}

fn forking_background() -> Result<(), Failure> {
    let _stop = StopAsking;
    for fork in 0..FORKS {
        // SAFETY: the child starts one thread and returns from the init;
        // that thread `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            std::thread::spawn(callgate_dev::exit_after_gate_check);
            return Ok(());
        }
        let status = callgate_dev::wait_for_child(
            pid,
            Duration::from_secs(10),
            &format!("child {fork}: the init or the gate blocked"),
        );
        if status != 0 {
            return Err(Failure::new(format!(
                "child {fork}: check failed with {status} (see `exit_after_gate_check`)"
            )));
        }
    }
    Ok(())
}

#[test]
fn a_child_forked_while_threads_ask_the_gate_finishes_its_init() {
    crate::child::alone(|| {
        let askers: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(|| {
                    while !DONE.load(Ordering::SeqCst) {
                        if fail_fast(3) == -1 {
                            TURNED_AWAY.fetch_add(1, Ordering::Relaxed);
                        }
                        assert_ne!(
                            callgate::init_state(),
                            InitState::Failed(String::new()),
                            "an init failed without a message"
                        );
                    }
                })
            })
            .collect();
        cg::run_init("forking_background", true, forking_background);
        for asker in askers {
            asker.join().unwrap();
        }
        assert_eq!(callgate::init_state(), InitState::Ready);
        assert!(
            TURNED_AWAY.load(Ordering::Relaxed) > 0,
            "the askers never found the gate closed"
        );
        assert_eq!(gated(7), 7);
    });
}
