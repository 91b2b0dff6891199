//! Emptying the environment: `callgate::env::clear` against removing each
//! variable with `std::env::remove_var`.
//!
//! [`measure`] returns the benchmark's `env.*` keys.

use std::ffi::OsString;
use std::time::Instant;

/// The environment sizes measured.
const SIZES: [usize; 3] = [100, 1_000, 10_000];

/// Times `callgate::env::clear` and a `std::env::remove_var` loop on
/// environments of exactly 100, 1 000 and 10 000 variables.
///
/// Returns `env.clear_{n}_ns` and `env.remove_loop_{n}_ns` with the
/// `[min, median, max]` of `samples` runs (at least 7), in nanoseconds. The
/// variables are set before each run starts its clock; the loop removes them
/// in the order they were set. The process environment, and with it
/// callgate's settings, is restored before this returns.
///
/// It rewrites the environment, so call it while no other thread runs (or
/// at least none reads or writes the environment): the contract of
/// `callgate::env::clear`. Setting the 10 000 variables is itself quadratic,
/// so the whole measurement takes a few seconds.
pub fn measure(samples: usize) -> Vec<(String, [f64; 3])> {
    let samples = samples.max(7);
    let saved: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let names: Vec<String> = (0..SIZES[SIZES.len() - 1])
        .map(|i| format!("BENCH_{i:05}"))
        .collect();
    let mut results = Vec::new();
    for size in SIZES {
        let names = &names[..size];
        let clear = summarise((0..samples).map(|_| {
            fill(names);
            let start = Instant::now();
            // SAFETY: `measure`'s caller keeps other threads away from the
            // environment.
            unsafe { callgate::env::clear() };
            start.elapsed().as_nanos() as f64
        }));
        let remove_loop = summarise((0..samples).map(|_| {
            fill(names);
            let start = Instant::now();
            for name in names {
                // SAFETY: as above.
                unsafe { std::env::remove_var(name) };
            }
            start.elapsed().as_nanos() as f64
        }));
        results.push((format!("env.clear_{size}_ns"), clear));
        results.push((format!("env.remove_loop_{size}_ns"), remove_loop));
    }
    restore(&saved);
    results
}

/// Makes `names` the whole environment.
fn fill(names: &[String]) {
    // SAFETY: `measure`'s caller keeps other threads away from the
    // environment.
    unsafe { callgate::env::clear() };
    for name in names {
        // SAFETY: as above.
        unsafe { std::env::set_var(name, "1") };
    }
}

/// Puts the environment `measure` started with back, settings included.
fn restore(saved: &[(OsString, OsString)]) {
    // SAFETY: `measure`'s caller keeps other threads away from the
    // environment.
    unsafe { callgate::env::clear() };
    for (key, value) in saved {
        // SAFETY: as above.
        unsafe { callgate::env::set_var(key, value) };
    }
}

/// `[min, median, max]` of the timings.
fn summarise(timings: impl Iterator<Item = f64>) -> [f64; 3] {
    let mut timings: Vec<f64> = timings.collect();
    timings.sort_by(f64::total_cmp);
    let middle = timings.len() / 2;
    let median = if timings.len().is_multiple_of(2) {
        (timings[middle - 1] + timings[middle]) / 2.0
    } else {
        timings[middle]
    };
    [timings[0], median, timings[timings.len() - 1]]
}
