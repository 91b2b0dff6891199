//! A call that waits long at the init gate says so on standard error, once
//! per library: an init that waits for a thread making a gated call would
//! otherwise hang the process without a word.

use std::io::Read;
use std::os::fd::FromRawFd;
use std::time::Duration;

use callgate::__private::{self as cg, Failure};
use callgate_dev::gated;

/// How long the runtime lets a call wait before it says so.
const LONG_WAIT: Duration = Duration::from_secs(10);

/// An init that takes longer than [`LONG_WAIT`], then lets the calls
/// waiting for it through.
fn slow_init() -> Result<(), Failure> {
    std::thread::sleep(LONG_WAIT + Duration::from_millis(1_500));
    Ok(())
}

/// The child: two threads wait at the gate for the slow init; both pass
/// once it finished. Returns the exit status.
fn child_status() -> i32 {
    cg::run_init("slow_init", true, slow_init);
    let waiters: Vec<_> = (0..2).map(|_| std::thread::spawn(|| gated(3))).collect();
    let passed = waiters
        .into_iter()
        .all(|waiter| waiter.join().is_ok_and(|value| value == 3));
    if passed { 0 } else { 1 }
}

#[test]
fn a_call_that_waits_long_at_the_gate_says_so_once() {
    crate::child::alone(|| {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe` writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe failed");
        // SAFETY: the child redirects its standard error, runs its check and
        // `_exit`s.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: `fds[1]` is the pipe's open write end; standard error
            // becomes it, and the original descriptors are closed.
            unsafe {
                libc::dup2(fds[1], 2);
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            let status = child_status();
            // SAFETY: `_exit` ends the child without running the parent's
            // atexit handlers or flushing its buffers.
            unsafe { libc::_exit(status) }
        }
        // SAFETY: `fds[1]` is the parent's copy of the write end, closed once,
        // so that reading ends when the child exits.
        unsafe { libc::close(fds[1]) };
        // SAFETY: `fds[0]` is the pipe's open read end, owned by the `File`
        // from here on.
        let mut read_end = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut stderr = String::new();
        read_end.read_to_string(&mut stderr).unwrap();
        let status = callgate_dev::wait_for_child(
            pid,
            Duration::from_secs(30),
            "the child's calls never passed the gate",
        );
        assert_eq!(
            status, 0,
            "a waiting call did not pass the gate; stderr: {stderr}"
        );
        let said = "callgate: a call of `gated` has waited 10 s at the init gate for \
                    `#[callgate::init]` code that is still running; if that init waits for this \
                    thread (joins a thread that makes a gated call, say), neither will go on";
        assert_eq!(
            stderr.matches(said).count(),
            1,
            "expected the long wait reported once, by one of the two waiting calls; stderr: {stderr}"
        );
    });
}
