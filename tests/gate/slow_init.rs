//! The init gate with a slow background init: callers wait, init code does
//! not, `gate = fail` fails fast, and every waiter is released at the end.
//!
//! The gate is process-wide, so the scenario is one test, step by step.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use callgate::__private::{self as cg, Attach, Failure, GatePolicy, Site};
use callgate::InitState;
use callgate_dev::{Spawn, run_threads, site};

static BODIES_RUN: AtomicUsize = AtomicUsize::new(0);
static FINISH_INIT: AtomicBool = AtomicBool::new(false);
static CALL_FROM_INIT: AtomicI32 = AtomicI32::new(i32::MIN);

extern "C" fn counted(x: i32) -> i32 {
    static SITE: Site = site("counted", Attach::Bound, GatePolicy::Wait);
    cg::call(
        &SITE,
        || -1,
        || -2,
        |_| {
            BODIES_RUN.fetch_add(1, Ordering::SeqCst);
            cg::ok(x)
        },
    )
}

extern "C" fn fail_fast(x: i32) -> i32 {
    static SITE: Site = site("fail_fast", Attach::Bound, GatePolicy::Fail);
    cg::call(&SITE, || -1, || -2, |_| cg::ok(x))
}

extern "C" fn ungated(x: i32) -> i32 {
    static SITE: Site = site("ungated", Attach::Bound, GatePolicy::Skip);
    cg::call(&SITE, || -1, || -2, |_| cg::ok(x))
}

fn slow_init() -> Result<(), Failure> {
    // A callback made by init code itself runs at once.
    CALL_FROM_INIT.store(counted(7), Ordering::SeqCst);
    while !FINISH_INIT.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

fn wait_for(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn callers_wait_for_a_slow_init_then_all_run() {
    crate::child::alone(|| {
        assert_eq!(
            callgate::init_state(),
            InitState::Ready,
            "no init: the gate starts open"
        );
        cg::run_init("slow_init", true, slow_init);
        assert_eq!(callgate::init_state(), InitState::Pending);

        wait_for("the init's own callback", || {
            CALL_FROM_INIT.load(Ordering::SeqCst) != i32::MIN
        });
        assert_eq!(
            CALL_FROM_INIT.load(Ordering::SeqCst),
            7,
            "a call from init code must not wait"
        );
        let from_init = BODIES_RUN.load(Ordering::SeqCst);

        let waiters = std::thread::spawn(|| {
            run_threads(
                counted,
                16,
                1,
                Spawn {
                    start_together: true,
                    hold_until_all_called: false,
                },
            )
        });
        wait_for("16 waiting callers", || callgate::stats().gate_waits >= 16);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            BODIES_RUN.load(Ordering::SeqCst),
            from_init,
            "a caller ran before init finished"
        );
        assert_eq!(fail_fast(3), -1, "gate = fail returns on_error at once");
        let message = callgate::last_error().unwrap();
        assert!(
            message.contains("before initialisation finished"),
            "{message}"
        );
        assert_eq!(ungated(4), 4, "gate = skip never waits");

        FINISH_INIT.store(true, Ordering::SeqCst);
        let results = waiters.join().unwrap();
        assert!(results.iter().all(|r| r.first == 0), "{results:?}");
        assert_eq!(BODIES_RUN.load(Ordering::SeqCst), from_init + 16);
        assert_eq!(callgate::init_state(), InitState::Ready);
        assert_eq!(fail_fast(5), 5);
    });
}
