//! A test's body in a process of its own: this test binary started again
//! with `--exact <test>`. For tests that read or change what the whole
//! process shares (the statistics' exact counts, the environment and the
//! settings, the init gate, `fork`), which other tests of the binary would
//! disturb.

use std::process::{Command, Output};

/// Set in a child to the name of the test whose body it runs.
const CHILD: &str = "CALLGATE_TEST_CHILD";
/// Printed by a child that ran its body, so that a test name `--exact`
/// does not match cannot pass by running nothing.
const RAN: &str = "callgate-test: child body ran";

/// In the child started for the running test, runs `body` and returns
/// `None`; everywhere else starts that child (`setup` adjusts its command,
/// its environment say), waits for it to succeed and returns its output.
pub fn in_child(setup: impl FnOnce(&mut Command), body: impl FnOnce()) -> Option<Output> {
    // libtest runs each test on a thread named after it.
    let test = std::thread::current()
        .name()
        .expect("a test thread has the test's name")
        .to_owned();
    if std::env::var(CHILD).is_ok_and(|child| child == test) {
        body();
        println!("{RAN}");
        return None;
    }
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(CHILD, &test);
    setup(&mut command);
    let output = command.output().expect("starting the child test process");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains(RAN),
        "child running `{test}` failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    Some(output)
}

/// Runs `body` in a process of its own (see [`in_child`]).
pub fn alone(body: impl FnOnce()) {
    in_child(|_| {}, body);
}
