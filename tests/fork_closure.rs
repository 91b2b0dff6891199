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
/// Set while a call with [`OVERLAP_PROBE`] is in the body.
static INSIDE: AtomicBool = AtomicBool::new(false);
/// Set when two calls were in the body at once.
static OVERLAPPED: AtomicBool = AtomicBool::new(false);
/// The value whose calls stay in the body a while, watching for another.
const OVERLAP_PROBE: i32 = 20;

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
/// before the fork, and for a new one; in a child of the child, calls from
/// new threads still take turns (the context the first fork left out of
/// use stays so, or a thread holding a turn under its address would have
/// it taken over); dropped, it drops its state at once (the call the
/// child took the turn from holds no reference any more).
fn child_status<C>(callable: Callable, closure: C) -> i32 {
    if callable.call(5) != 6 {
        return 1;
    }
    match std::thread::spawn(move || callable.call(7)).join() {
        Ok(8) => {}
        Ok(_) => return 2,
        Err(_) => return 3,
    }
    // SAFETY: the grandchild runs its threads and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let threads: Vec<_> = (0..4)
            .map(|_| std::thread::spawn(move || callable.call(OVERLAP_PROBE)))
            .collect();
        let all_returned = threads
            .into_iter()
            .all(|thread| thread.join().is_ok_and(|value| value == OVERLAP_PROBE + 1));
        let status = if !all_returned {
            1
        } else if OVERLAPPED.load(Ordering::SeqCst) {
            2
        } else {
            0
        };
        // SAFETY: as in the test.
        unsafe { libc::_exit(status) }
    }
    if pid < 0
        || callgate_dev::wait_for_child(pid, Duration::from_secs(10), "the grandchild hung") != 0
    {
        return 5;
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
        if value == OVERLAP_PROBE {
            if INSIDE.swap(true, Ordering::SeqCst) {
                OVERLAPPED.store(true, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(10));
            INSIDE.store(false, Ordering::SeqCst);
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
