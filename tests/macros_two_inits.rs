//! Two `#[callgate::init]`s in one binary, with other load-time code between
//! them: a callback made while the first runs waits for both, not only for
//! the first. (Had each constructor armed its own init just before starting
//! it, the gate would open while the code between them runs.)

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use callgate::c_callback;
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn m_call_i32(cb: extern "C" fn(i32) -> i32, value: i32) -> i32;
}

/// How many of the two inits have finished.
static INITS_DONE: AtomicUsize = AtomicUsize::new(0);

/// The thread that calls the callback while the first init runs.
static CALLER: Mutex<Option<JoinHandle<i32>>> = Mutex::new(None);

/// Returns how many inits had finished when it ran.
#[c_callback(on_error = -1)]
fn inits_done(_unused: i32) -> i32 {
    INITS_DONE.load(Ordering::SeqCst) as i32
}

/// How many times load-time code ran with one init finished and the other
/// not started: the window the test needs.
static RAN_BETWEEN: AtomicUsize = AtomicUsize::new(0);

/// Plain load-time code: when it runs between the two inits, it gives a
/// callback that passed the gate early time to run. Written before and
/// after each init, so that one runs between them whatever order the
/// compiler gives the constructors of one module and of the two (debug
/// and release builds differ); the test checks that one did.
macro_rules! load_time_code {
    () => {
        const _: () = {
            extern "C" fn maybe_between_inits() {
                if INITS_DONE.load(Ordering::SeqCst) == 1 {
                    RAN_BETWEEN.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }

            #[used]
            #[unsafe(link_section = ".init_array")]
            static LOAD_TIME_CODE: extern "C" fn() = maybe_between_inits;
        };
    };
}

load_time_code!();

/// Whichever init runs first starts a C call of `inits_done` and returns
/// once that call waits at the gate.
fn run_an_init() {
    if INITS_DONE.load(Ordering::SeqCst) == 0 {
        let waits_before = callgate::stats().gate_waits;
        // SAFETY: `inits_done` is a callback of the right signature.
        let caller = std::thread::spawn(|| unsafe { m_call_i32(inits_done, 0) });
        *CALLER.lock().unwrap() = Some(caller);
        let deadline = Instant::now() + Duration::from_secs(10);
        while callgate::stats().gate_waits == waits_before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    INITS_DONE.fetch_add(1, Ordering::SeqCst);
}

#[callgate::init]
fn first() {
    run_an_init();
}

load_time_code!();

mod second {
    use super::*;

    load_time_code!();

    #[callgate::init]
    fn second() {
        run_an_init();
    }

    load_time_code!();
}

#[test]
fn a_callback_waits_for_every_init_of_the_library() {
    assert!(
        RAN_BETWEEN.load(Ordering::SeqCst) >= 1,
        "no load-time code ran between the two inits: the test shows nothing"
    );
    let caller = CALLER.lock().unwrap().take().expect("the first init ran");
    assert_eq!(
        caller.join().unwrap(),
        2,
        "the callback ran before the second init had finished"
    );
    assert_eq!(callgate::init_state(), callgate::InitState::Ready);
    assert!(callgate::stats().gate_waits >= 1);
}
