//! A `fork` while another thread is inside a `Closure::new` call: the
//! child has no thread for that call, whose turn would stay taken for good.
//! The child's first call of the closure takes the turn over (from a thread
//! bound before the fork, and from a new one), while the parent's call goes
//! on and returns as before.
//!
//! The references that the calls of the threads the child lacks held are
//! given up in the child, so that C's `free` there drops the closure: that
//! of a call waiting for the turn, and those of `Closure::concurrent` calls
//! that counted one (nested in another concurrent closure's call, or on a
//! thread served per call).

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

/// Sets `flag` when dropped: part of a closure's state.
struct SetOnDrop(&'static AtomicBool);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// A closure C owns (`into_raw_parts`), to call and free from any thread
/// and process.
#[derive(Clone, Copy)]
struct Owned {
    call: DataFirst,
    data: usize,
    free: unsafe extern "C" fn(*mut c_void),
}

impl Owned {
    fn new(parts: callgate::closure::RawClosure<fn(i32) -> i32>) -> Owned {
        Owned {
            call: parts.data_first,
            data: parts.data as usize,
            free: parts.free,
        }
    }

    fn call(self, value: i32) -> i32 {
        // SAFETY: called before the `free` of this process.
        unsafe { cb_call_first(self.call, self.data as *mut c_void, value) }
    }

    /// Starts a C thread that calls the closure once.
    fn start(self, value: i32) -> *mut c_void {
        // SAFETY: the thread is joined before the `free` of this process.
        unsafe { cb_start(self.call, self.data as *mut c_void, value) }
    }

    fn free(self) {
        // SAFETY: C's reference, given up once in this process.
        unsafe { (self.free)(self.data as *mut c_void) }
    }
}

/// Forks a child that runs `check` and exits with what it returns; returns
/// that status (after at most ten seconds).
fn in_child(check: impl FnOnce() -> i32, hung: &str) -> i32 {
    // SAFETY: the child runs `check` and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let status = check();
        // SAFETY: `_exit` ends the child without running the parent's
        // atexit handlers or flushing its buffers.
        unsafe { libc::_exit(status) }
    }
    callgate_dev::wait_for_child(pid, Duration::from_secs(10), hung)
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
    crate::child::alone(|| {
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
    });
}

/// A `fork` while one thread is inside a `Closure::new` call and another
/// waits for its turn: in the child, whose first call takes the turn over,
/// C's `free` drops the closure, since the child also gives up the
/// reference of the call that waited. Before, that reference was never
/// given up and the closure leaked in the child.
#[test]
fn a_child_gives_up_the_reference_of_a_call_that_waited_for_the_turn() {
    crate::child::alone(|| {
        static HELD: Hold = Hold::new();
        static DROPPED: AtomicBool = AtomicBool::new(false);
        /// Set by the waiting thread just before its call.
        static WAITING: AtomicBool = AtomicBool::new(false);
        let state = SetOnDrop(&DROPPED);
        let closure = Owned::new(
            Closure::new(-1, move |value: i32| -> i32 {
                let _state = &state;
                if value == 0 {
                    HELD.hold();
                }
                value + 1
            })
            .into_raw_parts(),
        );
        let holder = closure.start(0);
        HELD.wait_until_holding();
        let waiter = std::thread::spawn(move || {
            WAITING.store(true, Ordering::SeqCst);
            closure.call(1)
        });
        while !WAITING.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        // Long enough for the waiter's call to find the turn taken and wait.
        std::thread::sleep(Duration::from_millis(200));

        let status = in_child(
            || {
                // Takes the turn over from the call left inside the body.
                if closure.call(5) != 6 {
                    return 1;
                }
                closure.free();
                if DROPPED.load(Ordering::SeqCst) { 0 } else { 2 }
            },
            "the child's call waited for the turn of a call it has no thread for",
        );
        assert_eq!(
            status, 0,
            "child check failed: 1, the call; 2, the closure was not dropped by its free"
        );

        HELD.release();
        // SAFETY: `holder` came from `cb_start`, joined once.
        assert_eq!(unsafe { cb_join(holder) }, 1);
        assert_eq!(waiter.join().unwrap(), 2);
        assert!(!DROPPED.load(Ordering::SeqCst));
        closure.free();
        assert!(DROPPED.load(Ordering::SeqCst));
    });
}

/// A `fork` while a thread is inside a `Closure::concurrent` call nested in
/// another concurrent closure's call: the nested call counted a reference
/// (its thread's hazard word announces the outer closure). In the child,
/// C's `free` drops both closures.
#[test]
fn a_child_gives_up_the_reference_of_a_nested_concurrent_call() {
    crate::child::alone(|| {
        static HELD: Hold = Hold::new();
        static INNER_DROPPED: AtomicBool = AtomicBool::new(false);
        static OUTER_DROPPED: AtomicBool = AtomicBool::new(false);
        let inner_state = SetOnDrop(&INNER_DROPPED);
        let inner = Owned::new(
            Closure::concurrent(-1, move |value: i32| -> i32 {
                let _state = &inner_state;
                if value == 0 {
                    HELD.hold();
                }
                value + 1
            })
            .into_raw_parts(),
        );
        let outer_state = SetOnDrop(&OUTER_DROPPED);
        let outer = Owned::new(
            Closure::concurrent(-1, move |value: i32| -> i32 {
                let _state = &outer_state;
                // Through C, as a C library calling back would.
                inner.call(value) + 10
            })
            .into_raw_parts(),
        );
        let started = outer.start(0);
        HELD.wait_until_holding();

        let status = in_child(
            || {
                // Both still work in the child.
                if outer.call(1) != 12 {
                    return 1;
                }
                inner.free();
                if !INNER_DROPPED.load(Ordering::SeqCst) {
                    return 2;
                }
                outer.free();
                if OUTER_DROPPED.load(Ordering::SeqCst) {
                    0
                } else {
                    3
                }
            },
            "the child blocked calling the closures",
        );
        assert_eq!(
            status, 0,
            "child check failed: 1, a call; 2, the nested closure was not dropped by its \
         free; 3, the outer one was not"
        );

        HELD.release();
        // SAFETY: `started` came from `cb_start`, joined once.
        assert_eq!(unsafe { cb_join(started) }, 11);
        inner.free();
        outer.free();
        assert!(INNER_DROPPED.load(Ordering::SeqCst) && OUTER_DROPPED.load(Ordering::SeqCst));
    });
}

/// A `fork` while a thread served per call (`CALLGATE=attach=per_call`) is
/// inside a `Closure::concurrent` call, which counted a reference: in the
/// child, C's `free` drops the closure. Runs in a child process of its own
/// (forked before anything else here), so that the setting stays there.
#[test]
fn a_child_gives_up_the_reference_of_a_per_call_concurrent_call() {
    crate::child::alone(|| {
        static HELD: Hold = Hold::new();
        static DROPPED: AtomicBool = AtomicBool::new(false);
        let status = in_child(
            || {
                // SAFETY: this process has one thread.
                unsafe { callgate::env::set_var("CALLGATE", "attach=per_call") };
                let state = SetOnDrop(&DROPPED);
                let closure = Owned::new(
                    Closure::concurrent(-1, move |value: i32| -> i32 {
                        let _state = &state;
                        if value == 0 {
                            HELD.hold();
                        }
                        value + 1
                    })
                    .into_raw_parts(),
                );
                let started = closure.start(0);
                HELD.wait_until_holding();
                let status = in_child(
                    || {
                        if closure.call(1) != 2 {
                            return 1;
                        }
                        closure.free();
                        if DROPPED.load(Ordering::SeqCst) { 0 } else { 2 }
                    },
                    "the grandchild blocked calling the closure",
                );
                HELD.release();
                // SAFETY: `started` came from `cb_start`, joined once.
                if unsafe { cb_join(started) } != 1 {
                    return 11;
                }
                closure.free();
                if !DROPPED.load(Ordering::SeqCst) {
                    return 12;
                }
                status
            },
            "the per-call process blocked",
        );
        assert_eq!(
            status, 0,
            "check failed: 1, the grandchild's call; 2, the closure was not dropped by its \
         free in the grandchild; 11 or 12, the per-call process's own call or free"
        );
    });
}
