//! Bindings to the C harnesses in `tests/c` and `examples/c`, shared by
//! callgate's integration tests and examples.
//!
//! This package is not published: it exists to drive the `callgate` crate
//! from real C code.

use core::ffi::c_int;

use callgate::__private::{Attach, GatePolicy, OnFailure, Site};

/// The site of a hand-written trampoline over callgate's hidden runtime API
/// (what `#[c_callback]` generates), returning its fallback values on
/// failure: the runtime tests use these to exercise the runtime alone.
pub const fn site(name: &'static str, attach: Attach, gate: GatePolicy) -> Site {
    Site {
        name,
        attach,
        gate,
        on_panic: OnFailure::Return,
        on_error: OnFailure::Return,
    }
}

/// A bound callback behind the init gate (`gate = wait`) that returns its
/// argument, or -1 when the gate turns it away (-2 for a panic, which it
/// never makes): the init and `fork` tests' probe of the gate.
pub extern "C" fn gated(x: i32) -> i32 {
    static SITE: Site = site("gated", Attach::Bound, GatePolicy::Wait);
    callgate::__private::call(&SITE, || -1, || -2, |_| callgate::__private::ok(x))
}

/// In a `fork` child whose init goes on there: from a thread that is not
/// init code, waits at the gate with [`gated`], then ends the child with
/// what it saw: 0 when the call passed and `init_state()` says ready, 1
/// when it passed but `init_state()` says otherwise, 2 when the gate
/// turned the call away. Never returns.
pub fn exit_after_gate_check() {
    let status = match (gated(5), callgate::init_state()) {
        (5, callgate::InitState::Ready) => 0,
        (5, _) => 1,
        _ => 2,
    };
    // SAFETY: `_exit` ends the child without running the parent's atexit
    // handlers or flushing its buffers.
    unsafe { libc::_exit(status) }
}

/// A Rust callback as the C harness sees it.
pub type HarnessCallback = unsafe extern "C" fn(i32) -> i32;

/// What one harness thread saw.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ThreadResult {
    /// The callback's result on the thread's first call.
    pub first: i32,
    /// Later calls whose result differed from `first`.
    pub changes: i64,
}

unsafe extern "C" {
    fn h_run_threads(
        cb: HarnessCallback,
        threads: c_int,
        calls_per_thread: i64,
        start_together: c_int,
        hold_until_all_called: c_int,
        results: *mut ThreadResult,
    ) -> c_int;
    fn h_sequential_threads(cb: HarnessCallback, threads: c_int, calls_per_thread: i64) -> c_int;
    fn h_calls_from_late_key_destructor(
        cb: HarnessCallback,
        threads: c_int,
        per_wave: c_int,
    ) -> i64;
    fn h_call_nested(cb: HarnessCallback, value: i32) -> i32;
}

/// How [`run_threads`] starts and ends its threads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spawn {
    /// All threads make their first call at the same moment (a barrier).
    pub start_together: bool,
    /// No thread exits before every thread has made its calls.
    pub hold_until_all_called: bool,
}

/// Runs `threads` C pthreads that each call `cb` `calls` times; returns what
/// each saw. Panics if a thread cannot be created.
pub fn run_threads(
    cb: HarnessCallback,
    threads: usize,
    calls: i64,
    spawn: Spawn,
) -> Vec<ThreadResult> {
    let mut results = vec![ThreadResult::default(); threads];
    // SAFETY: `results` has room for `threads` entries; `cb` is a valid
    // callback for the whole call.
    let rc = unsafe {
        h_run_threads(
            cb,
            c_int::try_from(threads).expect("thread count fits in int"),
            calls,
            c_int::from(spawn.start_together),
            c_int::from(spawn.hold_until_all_called),
            results.as_mut_ptr(),
        )
    };
    assert_eq!(rc, 0, "the C harness could not create its threads");
    results
}

/// Creates and joins `threads` C pthreads one after another, each calling
/// `cb` `calls` times.
pub fn sequential_threads(cb: HarnessCallback, threads: usize, calls: i64) {
    // SAFETY: `cb` is a valid callback for the whole call.
    let rc = unsafe { h_sequential_threads(cb, c_int::try_from(threads).expect("fits"), calls) };
    assert_eq!(rc, 0, "the C harness could not create its threads");
}

/// Runs `threads` C pthreads (`per_wave` at a time) that call `cb` once and
/// again from a pthread key destructor created after callgate's key.
/// Returns how many destructor calls ran the callback (returned `>= 0`).
pub fn calls_from_late_key_destructor(cb: HarnessCallback, threads: usize, per_wave: usize) -> i64 {
    // SAFETY: `cb` is a valid callback for the whole call.
    let n = unsafe {
        h_calls_from_late_key_destructor(
            cb,
            c_int::try_from(threads).expect("fits"),
            c_int::try_from(per_wave).expect("fits"),
        )
    };
    assert!(n >= 0, "the C harness failed");
    n
}

/// Calls `cb(value)` from C (for Rust → C → Rust nesting).
pub fn call_from_c(cb: HarnessCallback, value: i32) -> i32 {
    // SAFETY: `cb` is a valid callback.
    unsafe { h_call_nested(cb, value) }
}

/// `n` with thousands separators (`1234567` → `"1,234,567"`), for the
/// examples' tables.
pub fn thousands(n: impl Into<i128>) -> String {
    let n = n.into();
    let digits = n.unsigned_abs().to_string();
    let mut out = String::from(if n < 0 { "-" } else { "" });
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The README's examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The guide's pages (`guide/src/SUMMARY.md`), whose Rust examples run as
/// doctests: the build script writes one item per page.
#[cfg(doctest)]
pub mod guide {
    include!(concat!(env!("OUT_DIR"), "/guide_pages.rs"));
}

/// A call that holds its thread until the test releases it: for tests that
/// need a callback to be running on another thread at a known moment.
#[derive(Default)]
pub struct Hold {
    /// (holding, released).
    state: std::sync::Mutex<(bool, bool)>,
    wake: std::sync::Condvar,
}

impl Hold {
    /// A hold no call is in yet, for a `static`.
    pub const fn new() -> Hold {
        Hold {
            state: std::sync::Mutex::new((false, false)),
            wake: std::sync::Condvar::new(),
        }
    }

    /// Marks the call as holding and blocks until [`release`](Hold::release).
    pub fn hold(&self) {
        let mut state = self.state.lock().unwrap();
        state.0 = true;
        self.wake.notify_all();
        while !state.1 {
            state = self.wake.wait(state).unwrap();
        }
    }

    /// Blocks until a call is in [`hold`](Hold::hold).
    pub fn wait_until_holding(&self) {
        let mut state = self.state.lock().unwrap();
        while !state.0 {
            state = self.wake.wait(state).unwrap();
        }
    }

    /// Lets the holding call return.
    pub fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.wake.notify_all();
    }
}

/// Waits for the `fork` child `pid` to exit and returns its exit status;
/// kills it and panics with `hung` if it is still running after `timeout`,
/// and panics if it died of a signal.
pub fn wait_for_child(pid: libc::pid_t, timeout: std::time::Duration, hung: &str) -> c_int {
    let deadline = std::time::Instant::now() + timeout;
    let mut status = 0;
    // Short at first, for children that exit at once (tests fork many).
    let mut pause = std::time::Duration::from_micros(20);
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is the caller's child.
        let waited = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if waited == pid {
            break;
        }
        assert!(
            waited == 0,
            "waitpid failed: {}",
            std::io::Error::last_os_error()
        );
        if std::time::Instant::now() > deadline {
            // SAFETY: `pid` is the caller's child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            // SAFETY: as above; reaps the killed child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            panic!("{hung}");
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(5));
    }
    assert!(libc::WIFEXITED(status), "the child died: status {status}");
    libc::WEXITSTATUS(status)
}
