//! A C thread pool calling a Rust plugin through callgate.
//!
//! ```text
//! cargo run --release --example demo
//! ```
//!
//! `examples/c/demo.c` is the host: worker pthreads take jobs off a queue and
//! call the plugin's exported functions, as a C program linked against a
//! Rust `staticlib` or `cdylib` would. This file is the plugin:
//!
//! * a background `#[callgate::init]` builds a factor table while the host
//!   starts, and the workers' first calls wait for it at the init gate;
//! * `demo_factor` writes its answer into a `#[local]` per-thread buffer and
//!   returns a pointer to it, valid until that thread calls again;
//! * bad jobs (NULL, invalid UTF-8, not a number, a number that trips a bug)
//!   come back to C as NULL, and the host reads why through the error API
//!   that `callgate::export_error_api!(demo)` exports.
//!
//! Then it prints `callgate::stats()` and what a call costs.

use core::ffi::{c_char, c_int};
use std::ffi::CStr;
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use callgate::{Local, c_callback};
// The C host lives in the dev package's harness library.
use callgate_dev as _;

// ---------------------------------------------------------------- the plugin

/// Numbers below this are factored with the table.
const TABLE_LEN: usize = 1 << 22;

/// `SMALLEST_FACTOR[n]` is the smallest prime factor of `n`, for `n >= 2`.
static SMALLEST_FACTOR: OnceLock<Vec<u32>> = OnceLock::new();

/// Builds the factor table on a thread of its own when the program starts.
/// Callbacks that arrive meanwhile wait at the init gate.
#[callgate::init(background)]
fn build_factor_table() {
    let mut table = vec![0u32; TABLE_LEN];
    for n in 2..TABLE_LEN {
        if table[n] != 0 {
            continue;
        }
        for multiple in (n..TABLE_LEN).step_by(n) {
            if table[multiple] == 0 {
                table[multiple] = n as u32;
            }
        }
    }
    // Stands in for the rest of a real plugin's start-up (reading its
    // configuration, opening files), so the wait shows in every build.
    std::thread::sleep(Duration::from_millis(30));
    SMALLEST_FACTOR.set(table).expect("the init runs once");
}

/// Answer buffers created: one per thread that asked for one.
static ANSWER_BUFFERS: AtomicUsize = AtomicUsize::new(0);

/// A thread's answer buffer: `demo_factor` returns a pointer into it, valid
/// until the same thread calls again (like the buffer of C's `strerror`).
struct Answer {
    text: String,
}

impl Default for Answer {
    fn default() -> Answer {
        // Relaxed: a statistic.
        ANSWER_BUFFERS.fetch_add(1, Ordering::Relaxed);
        Answer {
            text: String::with_capacity(64),
        }
    }
}

impl Local for Answer {}

/// C: `const char *demo_factor(const char *number);`
///
/// The prime factorisation of `number` as text, or NULL with the reason in
/// the last error.
#[c_callback]
fn demo_factor(#[local] answer: &mut Answer, number: &str) -> Result<*const c_char, String> {
    let n: usize = number
        .trim()
        .parse()
        .map_err(|_| format!("`{number}` is not a number"))?;
    let table = SMALLEST_FACTOR.get().expect("the init gate ran the init");
    answer.text.clear();
    if n < 2 {
        answer.text.push_str("no prime factors");
    } else if table.get(n).is_some_and(|&p| p as usize == n) {
        answer.text.push_str("prime");
    } else {
        let mut rest = n;
        let mut first = true;
        while rest > 1 {
            // Deliberately unchecked: a number past the table's end panics,
            // and the boundary turns the panic into NULL and a last error
            // instead of unwinding into C.
            let p = table[rest] as usize;
            let mut power = 0;
            while rest.is_multiple_of(p) {
                rest /= p;
                power += 1;
            }
            if !first {
                answer.text.push_str(" × ");
            }
            first = false;
            let _ = write!(answer.text, "{p}{}", superscript(power));
        }
    }
    answer.text.push('\0');
    Ok(answer.text.as_ptr().cast())
}

/// `n` in superscript digits, or nothing for 1.
fn superscript(n: u32) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    if n == 1 {
        return String::new();
    }
    n.to_string()
        .bytes()
        .map(|digit| DIGITS[usize::from(digit - b'0')])
        .collect()
}

// `demo_last_error_length`, `demo_last_error_message`, `demo_clear_last_error`.
callgate::export_error_api!(demo);

// -------------------------------------------------- callbacks for the timing

/// The same work as the C baseline, without callgate.
extern "C" fn plain_next(value: i32) -> i32 {
    value.wrapping_add(1)
}

/// The same work through the boundary; the calling thread stays bound.
#[c_callback(local, on_panic = -1)]
fn next_value(value: i32) -> i32 {
    value.wrapping_add(1)
}

/// The same, attaching and releasing the thread on every call.
#[c_callback(local, attach = per_call, on_panic = -1)]
fn next_per_call(value: i32) -> i32 {
    value.wrapping_add(1)
}

// ------------------------------------------------------------------ the host

#[repr(C)]
struct Job {
    input: *const c_char,
    worker: c_int,
    ok: c_int,
    elapsed_ns: i64,
    text: [c_char; 256],
}

type IntFn = extern "C" fn(i32) -> i32;

unsafe extern "C" {
    fn demo_host_run_jobs(workers: c_int, count: *mut usize) -> *const Job;
    fn demo_host_ns_per_call(callback: IntFn, calls: i64) -> f64;
    fn demo_host_first_call_ns(callback: IntFn, threads: c_int) -> f64;
    safe fn demo_host_c_next(value: i32) -> i32;
}

const WORKERS: c_int = 4;

fn main() {
    // Panics are reported to C through the last error; keep the default
    // hook's message for the deliberate one off the terminal.
    std::panic::set_hook(Box::new(|_| {}));

    println!("callgate demo: a C thread pool calling a Rust plugin");
    println!();
    println!(
        "The plugin's background init is building its factor table ({:?} now);",
        callgate::init_state()
    );
    println!("meanwhile the C host starts {WORKERS} worker pthreads on its job queue.");
    println!();

    let mut count = 0;
    // SAFETY: `count` is a valid `size_t *`; the host joins its threads
    // before returning.
    let jobs = unsafe { demo_host_run_jobs(WORKERS, &mut count) };
    assert!(!jobs.is_null(), "the C host could not create its threads");
    // SAFETY: the host returned its array of `count` jobs, which lives in
    // static storage and is no longer written.
    let jobs = unsafe { std::slice::from_raw_parts(jobs, count) };
    print_jobs(jobs);

    let stats = callgate::stats();
    let waited_ms = jobs.iter().map(|job| job.elapsed_ns).max().unwrap_or(0) as f64 / 1e6;
    let workers_used = {
        let mut workers: Vec<c_int> = jobs.iter().map(|job| job.worker).collect();
        workers.sort_unstable();
        workers.dedup();
        workers.len()
    };
    println!();
    println!(
        "{} first calls waited at the init gate (up to {waited_ms:.0} ms), then found the table built.",
        stats.gate_waits
    );
    println!(
        "{} #[local] answer buffers were created for {workers_used} workers and reused across {} jobs.",
        ANSWER_BUFFERS.load(Ordering::Relaxed),
        jobs.len()
    );
    println!();
    print_stats(&stats);
    println!();
    print_timings();
}

fn print_jobs(jobs: &[Job]) {
    println!(
        "  {:>3}  {:<6}  {:<13}  {:>9}  answer",
        "job", "worker", "input", "time"
    );
    for (index, job) in jobs.iter().enumerate() {
        let input = if job.input.is_null() {
            "NULL".to_owned()
        } else {
            // SAFETY: the host's inputs are NUL-terminated string literals.
            let bytes = unsafe { CStr::from_ptr(job.input) }.to_bytes();
            format!("\"{}\"", bytes.escape_ascii())
        };
        // SAFETY: the host NUL-terminates `text` (snprintf, or the error
        // API, which writes like snprintf).
        let text = unsafe { CStr::from_ptr(job.text.as_ptr()) }.to_string_lossy();
        let text = if job.ok != 0 {
            text.into_owned()
        } else {
            format!("NULL: {text}")
        };
        println!(
            "  {:>3}  w{:<5}  {input:<13}  {:>9}  {text}",
            index + 1,
            job.worker,
            duration(job.elapsed_ns as f64),
        );
    }
}

fn print_stats(stats: &callgate::Stats) {
    println!("callgate::stats():");
    let rows = [
        (
            stats.errors_returned,
            "errors_returned",
            "an Err or a bad argument: NULL to C",
        ),
        (
            stats.panics_caught,
            "panics_caught",
            "a panic stopped at the boundary: NULL to C",
        ),
        (
            stats.gate_waits,
            "gate_waits",
            "calls that waited for the init to finish",
        ),
        (stats.binds, "binds", "threads attached on their first call"),
        (
            stats.releases,
            "releases",
            "threads that exited: their contexts went back to the free list",
        ),
        (
            stats.contexts_free,
            "contexts_free",
            "contexts ready for the next new thread",
        ),
    ];
    for (value, name, meaning) in rows {
        println!("  {name:<16} {value:>4}   {meaning}");
    }
}

fn print_timings() {
    let (calls, runs) = if cfg!(debug_assertions) {
        (200_000, 3)
    } else {
        (2_000_000, 5)
    };
    let median = |callback: IntFn| {
        let mut samples: Vec<f64> = (0..runs)
            // SAFETY: `callback` is a valid function for the whole call.
            .map(|_| unsafe { demo_host_ns_per_call(callback, calls) })
            .collect();
        samples.sort_by(f64::total_cmp);
        samples[samples.len() / 2]
    };
    let rows = [
        ("C function through a pointer", median(demo_host_c_next)),
        ("Rust extern \"C\" fn, no callgate", median(plain_next)),
        ("#[c_callback], thread bound", median(next_value)),
        ("#[c_callback(attach = per_call)]", median(next_per_call)),
        (
            "first call on a new C thread (binds it)",
            // SAFETY: `next_value` is a valid function for the whole call.
            unsafe { demo_host_first_call_ns(next_value, 101) },
        ),
    ];
    println!(
        "Cost of a call from a C pthread (median of {runs} runs of {} calls{}):",
        callgate_dev::thousands(calls),
        if cfg!(debug_assertions) {
            "; a debug build, use --release for real figures"
        } else {
            ""
        }
    );
    for (what, ns) in rows {
        println!("  {what:<42} {:>9}", duration(ns));
    }
}

/// `ns` nanoseconds, in a unit that suits it.
fn duration(ns: f64) -> String {
    if ns < 0.0 {
        "failed".to_owned()
    } else if ns < 1e3 {
        format!("{ns:.1} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{:.1} ms", ns / 1e6)
    }
}
