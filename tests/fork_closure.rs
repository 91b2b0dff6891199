//! A `fork` while another thread is inside a `Closure::new` call: the
//! child has no thread for that call, whose turn would stay taken for good.
//! The child's first call of the closure takes the turn over (from a thread
//! bound before the fork, and from a new one), while the parent's call goes
//! on and returns as before.

use core::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use callgate::Closure;
use callgate_dev::Hold;

type DataFirst = unsafe extern "C" fn(*mut c_void, i32) -> i32;

unsafe extern "C" {
    fn cb_call_first(cb: DataFirst, data: *mut c_void, value: i32) -> i32;
    fn cb_start(cb: DataFirst, data: *mut c_void, value: i32) -> *mut c_void;
    fn cb_join(started: *mut c_void) -> i32;
}

static HOLD: Hold = Hold::new();

/// Set when the closure's state is dropped.
static DROPPED: AtomicBool = AtomicBool::new(false);

/// Part of the closure's state: records its drop.
struct DropFlag;

impl Drop for DropFlag {
    fn drop(&mut self) {
        DROPPED.store(true, Ordering::SeqCst);
    }
}

/// The closure's C function and data, to call from any thread.
#[derive(Clone, Copy)]
struct Callable(DataFirst, usize);

impl Callable {
    fn call(self, value: i32) -> i32 {
        // SAFETY: the closure outlives every call (the test keeps it).
        unsafe { cb_call_first(self.0, self.1 as *mut c_void, value) }
    }
}

/// The child's checks: the closure runs for this thread, which was bound
/// before the fork, and for a new one; dropped, it drops its state at once
/// (the call the child took the turn from holds no reference any more).
fn child_status<C>(callable: Callable, closure: C) -> i32 {
    if callable.call(5) != 6 {
        return 1;
    }
    match std::thread::spawn(move || callable.call(7)).join() {
        Ok(8) => {}
        Ok(_) => return 2,
        Err(_) => return 3,
    }
    drop(closure);
    if DROPPED.load(Ordering::SeqCst) { 0 } else { 4 }
}

#[test]
fn a_child_takes_over_the_turn_of_a_call_it_has_no_thread_for() {
    // `value + 1`; a call with 0 holds inside the body until released.
    let flag = DropFlag;
    let closure = Closure::new(-1, move |value: i32| -> i32 {
        let _state = &flag;
        if value == 0 {
            HOLD.hold();
        }
        value + 1
    });
    let callable = Callable(closure.data_first(), closure.data() as usize);
    // This thread is bound (its first call) before the fork.
    assert_eq!(callable.call(1), 2);
    // SAFETY: the closure outlives the thread (joined below).
    let started = unsafe { cb_start(callable.0, callable.1 as *mut c_void, 0) };
    HOLD.wait_until_holding();

    // SAFETY: the child runs its checks and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let status = child_status(callable, closure);
        // SAFETY: `_exit` ends the child without running the parent's
        // atexit handlers or flushing its buffers.
        unsafe { libc::_exit(status) }
    }
    let status = callgate_dev::wait_for_child(
        pid,
        Duration::from_secs(10),
        "the child waited for the turn of a call it has no thread for",
    );
    assert_eq!(status, 0, "child check failed (see `child_status`)");

    // The parent's held call goes on, and the closure takes turns as before.
    HOLD.release();
    // SAFETY: `started` came from `cb_start`, joined once.
    assert_eq!(unsafe { cb_join(started) }, 1);
    assert_eq!(callable.call(2), 3);
    drop(closure);
    assert!(DROPPED.load(Ordering::SeqCst));
}
