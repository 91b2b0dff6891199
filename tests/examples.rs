//! Smoke tests of the examples: each runs to completion and prints what it
//! is there to show.
//!
//! `cargo test` builds the examples next to this test binary
//! (`target/<profile>/examples/`). `cargo test --test examples` alone does
//! not: run `cargo build --examples` first, or it tests what is there.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs example `name` and returns its standard output, after checking that
/// it exited with status 0 within a minute.
fn run_example(name: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test>-<hash> → target/<profile>/examples/<name>
    let program: PathBuf = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps")
        .join("examples")
        .join(name);
    assert!(
        program.exists(),
        "{} is missing: `cargo test` builds the examples, or build them with \
         `cargo build --examples`",
        program.display()
    );
    let mut child = Command::new(&program)
        .env_remove("CALLGATE")
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the example");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("poll the example").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("example `{name}` did not finish within a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("collect the output");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "example `{name}` failed: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    stdout
}

/// Fails unless `output` has a line containing `text`; returns that line.
fn line<'a>(output: &'a str, text: &str) -> &'a str {
    output
        .lines()
        .find(|line| line.contains(text))
        .unwrap_or_else(|| panic!("no line with {text:?} in:\n{output}"))
}

/// The number in the first field after `label` on the line that starts with
/// `label` (after indentation), thousands separators allowed.
fn number_after(output: &str, label: &str) -> u64 {
    let line = output
        .lines()
        .find(|line| line.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no line starting with {label:?} in:\n{output}"));
    let rest = &line.trim_start()[label.len()..];
    let field = rest
        .split_whitespace()
        .next()
        .unwrap_or_else(|| panic!("nothing after {label:?} in {line:?}"));
    field
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("{field:?} after {label:?} is not a number"))
}

/// The C pool's jobs come back with answers or, for the bad ones, with the
/// error C read through `demo_last_error_message`; the stats add up.
#[test]
fn demo_shows_results_errors_stats_and_timings() {
    let out = run_example("demo");
    line(&out, "callgate demo: a C thread pool calling a Rust plugin");
    line(&out, "2³ × 3² × 5");
    line(&out, "127 × 9721");
    line(&out, "NULL: `twelve` is not a number");
    line(&out, "NULL: argument `number` is NULL");
    line(
        &out,
        "NULL: argument `number` is not valid UTF-8 (invalid byte at offset 3)",
    );
    line(
        &out,
        "NULL: callback `demo_factor` panicked: index out of bounds",
    );
    line(&out, "first calls waited at the init gate");

    assert_eq!(number_after(&out, "errors_returned"), 3);
    assert_eq!(number_after(&out, "panics_caught"), 1);
    let binds = number_after(&out, "binds");
    assert!((1..=4).contains(&binds), "binds: {binds}");
    assert_eq!(number_after(&out, "releases"), binds);

    for row in [
        "C function through a pointer",
        "Rust extern \"C\" fn, no callgate",
        "#[c_callback], thread bound",
        "#[c_callback(attach = per_call)]",
        "first call on a new C thread (binds it)",
    ] {
        let timing = line(&out, row);
        assert!(timing.trim_end().ends_with("ns") || timing.trim_end().ends_with("µs"));
    }
}

/// The comparator sorts through libc's `qsort`; its panic on NaN comes back
/// as 0 and a last error, and `qsort` finishes with every value in place.
#[test]
fn qsort_survives_a_panicking_comparator() {
    let out = run_example("qsort");
    let tokyo = out.find("Tokyo").expect("Tokyo is listed");
    let lima = out.find("Lima").expect("Lima is listed");
    assert!(tokyo < lima, "sorted by population, largest first:\n{out}");
    line(&out, "by_temperature(21.5, NaN) returned 0");
    line(
        &out,
        "last error: callback `by_temperature` panicked: cannot order 21.5 and NaN",
    );
    line(
        &out,
        "qsort returned normally and C carried on: every reading is still in the array",
    );
    assert!(number_after(&out, "panics caught:") >= 1);
}

/// A million calls from OpenMP's threads bind each thread once; the
/// per-call variant binds on every call.
#[test]
fn openmp_binds_each_thread_once() {
    let out = run_example("openmp");
    assert_eq!(
        number_after(&out, "#[c_callback(attach = per_call)]"),
        1_000_000
    );
    let per_call = line(&out, "#[c_callback(attach = per_call)]");
    assert!(
        per_call.contains("1,000,000   1,000,000"),
        "one bind per call: {per_call}"
    );

    // "Bound: 4 binds for 1,000,000 calls on 4 threads."
    let summary = line(&out, "Bound: ");
    let words: Vec<&str> = summary.split_whitespace().collect();
    let binds: u64 = words[1].parse().expect("binds");
    let calls = words[4].replace(',', "");
    let threads: u64 = words[7].parse().expect("threads");
    assert_eq!(calls, "1000000", "{summary}");
    assert_eq!(binds, threads, "one bind per thread: {summary}");
    if !out.contains("the C compiler has no OpenMP") {
        assert_eq!(threads, 4, "{summary}");
    }
    line(&out, "π ≈ 3.14159265");
}

/// Four connections score words with a Rust SQL function whose state
/// SQLite owns; a panic and an `Err` come back as SQL errors; SQLite drops
/// every connection's state once.
#[cfg(callgate_sqlite)]
#[test]
fn sqlite_functions_from_four_connections() {
    let out = run_example("sqlite");
    line(&out, "c | 3, gate | 33, rust | 78");
    line(
        &out,
        "SQL error: word_score(\"two words\"): ' ' is not a letter",
    );
    line(
        &out,
        "SQL error: callback `word_score` panicked: asked to panic",
    );
    line(&out, "connections 1-3: the same results");
    assert_eq!(number_after(&out, "words scored:"), 20);
    line(&out, "connection states dropped by SQLite: 4");
}
