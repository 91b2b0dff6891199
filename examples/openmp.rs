//! A Rust callback called from an OpenMP parallel loop.
//!
//! ```text
//! cargo run --release --example openmp
//! ```
//!
//! `examples/c/openmp.c` integrates a function with
//! `#pragma omp parallel for`, calling it through a function pointer from
//! OpenMP's threads: the calling thread and the worker pthreads libgomp
//! creates on the first parallel region and keeps for the later ones. The
//! function is Rust, behind `#[c_callback(local)]`.
//!
//! Each OpenMP thread is bound to a callgate context on its first call and
//! stays bound: a million calls over 50 parallel regions cost one bind per
//! thread. The same loop with `attach = per_call` binds on every call, for
//! comparison.

use std::time::Instant;

use callgate::c_callback;
// The C side lives in the dev package's OpenMP library.
use callgate_dev as _;

/// 4 / (1 + x²), whose integral over [0, 1] is π.
#[c_callback(local, on_panic = f64::NAN)]
fn integrand(x: f64) -> f64 {
    4.0 / (1.0 + x * x)
}

/// The same, attaching and releasing the calling thread on every call.
#[c_callback(local, attach = per_call, on_panic = f64::NAN)]
fn integrand_per_call(x: f64) -> f64 {
    4.0 / (1.0 + x * x)
}

type Integrand = extern "C" fn(f64) -> f64;

unsafe extern "C" {
    safe fn openmp_enabled() -> i32;
    fn openmp_integrate(
        f: Integrand,
        threads: i32,
        regions: i32,
        points: i64,
        calls_per_thread: *mut i64,
    ) -> f64;
}

const THREADS: i32 = 4;
const REGIONS: i32 = 50;
const POINTS: i64 = 20_000;

/// What one run of the parallel loops did.
struct Run {
    estimate: f64,
    calls_per_thread: Vec<i64>,
    calls: u64,
    binds: u64,
    millis: f64,
}

fn run(f: Integrand) -> Run {
    let mut calls_per_thread = vec![0; THREADS as usize];
    let before = callgate::stats();
    let start = Instant::now();
    // SAFETY: `calls_per_thread` has room for `THREADS` counts and `f` is a
    // valid function for the whole call.
    let estimate =
        unsafe { openmp_integrate(f, THREADS, REGIONS, POINTS, calls_per_thread.as_mut_ptr()) };
    let millis = start.elapsed().as_secs_f64() * 1e3;
    let after = callgate::stats();
    Run {
        estimate,
        calls: calls_per_thread.iter().map(|&calls| calls as u64).sum(),
        calls_per_thread,
        binds: after.binds - before.binds,
        millis,
    }
}

fn main() {
    println!("callgate openmp example: a Rust callback in an OpenMP parallel loop");
    println!();
    if openmp_enabled() == 0 {
        println!("(the C compiler has no OpenMP: the loops run on one thread)");
        println!();
    }
    println!(
        "Integrating 4/(1+x²) over [0, 1] in {REGIONS} parallel regions of {} points",
        callgate_dev::thousands(POINTS as u64)
    );
    println!("on {THREADS} OpenMP threads, the callback called once per point.");
    println!();

    // Per call first: afterwards no thread is bound, so the default run
    // below starts from scratch.
    let per_call = run(integrand_per_call);
    let bound = run(integrand);

    println!(
        "  {:<34} {:>11} {:>11} {:>9}",
        "callback", "calls", "binds", "time"
    );
    for (name, run) in [
        ("#[c_callback(attach = per_call)]", &per_call),
        ("#[c_callback] (bound: the default)", &bound),
    ] {
        println!(
            "  {name:<34} {:>11} {:>11} {:>6.1} ms",
            callgate_dev::thousands(run.calls),
            callgate_dev::thousands(run.binds),
            run.millis
        );
    }
    println!();
    let threads = bound
        .calls_per_thread
        .iter()
        .filter(|&&calls| calls > 0)
        .count();
    println!(
        "Bound: {} binds for {} calls on {threads} threads.",
        bound.binds,
        callgate_dev::thousands(bound.calls)
    );
    if bound.binds == threads as u64 {
        println!(
            "Each thread was bound on its first call and stayed bound through all {REGIONS} regions:"
        );
    }
    for (thread, calls) in bound.calls_per_thread.iter().enumerate() {
        let who = if thread == 0 {
            format!("OpenMP thread {thread} (the main thread)")
        } else {
            format!("OpenMP thread {thread} (a libgomp worker)")
        };
        println!(
            "  {who:<36} {:>9} calls",
            callgate_dev::thousands(*calls as u64)
        );
    }
    println!();
    println!(
        "π ≈ {:.12} (error {:.1e})",
        bound.estimate,
        (bound.estimate - std::f64::consts::PI).abs()
    );
    assert_eq!(per_call.estimate, bound.estimate);
}
