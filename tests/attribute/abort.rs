//! `on_panic = abort`: the process aborts with a message naming the callback.
//! Each test re-runs itself in a child process, which is the one to abort.

use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use callgate::c_callback;
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn m_call_i32(cb: extern "C" fn(i32) -> i32, value: i32) -> i32;
}

/// Set in the child process.
const CHILD: &str = "CALLGATE_MACROS_ABORT_CHILD";

#[c_callback(on_panic = abort)]
fn abort_on_panic(value: i32) -> i32 {
    assert!(value < 10, "value {value} is too large");
    value
}

#[derive(Debug)]
pub struct TooLarge;

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("too large")
    }
}

/// No `on_error`: an `Err` aborts too.
#[c_callback(on_panic = abort)]
fn abort_on_error(value: i32) -> Result<i32, TooLarge> {
    if value < 10 { Ok(value) } else { Err(TooLarge) }
}

/// Runs `test` in a child process that does the aborting call; returns its
/// stderr after checking it died of SIGABRT.
fn run_child(test: &str) -> String {
    let test = format!(
        "{}::{test}",
        module_path!().split_once("::").map_or("", |(_, path)| path)
    );
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGABRT),
        "{:?}\n{stderr}",
        output.status
    );
    stderr
}

fn call(cb: extern "C" fn(i32) -> i32, value: i32) -> i32 {
    // SAFETY: `cb` is a valid callback.
    unsafe { m_call_i32(cb, value) }
}

#[test]
fn on_panic_abort_aborts_naming_the_callback() {
    if std::env::var_os(CHILD).is_some() {
        assert_eq!(call(abort_on_panic, 1), 1);
        call(abort_on_panic, 11);
        unreachable!("the call above aborts");
    }
    let stderr = run_child("on_panic_abort_aborts_naming_the_callback");
    assert!(
        stderr.contains(
            "callgate: callback `abort_on_panic` panicked: value 11 is too large; aborting"
        ),
        "{stderr}"
    );
}

#[test]
fn on_panic_abort_without_on_error_aborts_on_err() {
    if std::env::var_os(CHILD).is_some() {
        assert_eq!(call(abort_on_error, 1), 1);
        call(abort_on_error, 11);
        unreachable!("the call above aborts");
    }
    let stderr = run_child("on_panic_abort_without_on_error_aborts_on_err");
    assert!(
        stderr.contains("callgate: callback `abort_on_error` failed: too large; aborting"),
        "{stderr}"
    );
}
