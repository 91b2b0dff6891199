//! `cargo run -p callgate-example-plugin --bin plugin-host` works: the C
//! host loads the plugin with `dlopen` and gets every expected result.

use std::process::Command;

#[test]
fn the_c_host_runs_the_plugin() {
    let output = Command::new(env!("CARGO_BIN_EXE_plugin-host"))
        .env_remove("CALLGATE")
        .output()
        .expect("run plugin-host");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.lines().last() == Some("result=ok"),
        "plugin-host failed: {}\n--- stdout\n{stdout}--- stderr\n{stderr}",
        output.status
    );
    for expected in [
        "plugin: spell-checker 1.0 (Rust, callgate)",
        "    last error (28 bytes with its NUL): there are no words to check",
        "    last error (27 bytes with its NUL): argument `session` is NULL",
        "qsort with plugin_word_order(): fig date kiwi apple banana cherry",
    ] {
        assert!(
            stdout.lines().any(|line| line == expected),
            "missing `{expected}` in\n{stdout}"
        );
    }
}
