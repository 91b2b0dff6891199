//! `callgate-bench`: what a call from a C thread into Rust costs through
//! callgate, next to the same call without it.
//!
//! ```sh
//! cargo run --release -p callgate-bench            # a table
//! cargo run --release -p callgate-bench -- --json  # medians as JSON
//! cargo run --release -p callgate-bench -- --markdown  # the guide's tables
//! ```
//!
//! Every call comes from a real `pthread_create` thread of the C harness
//! (`c/bench.c`, compiled by the build script) through a `volatile`
//! function pointer, so nothing is inlined; every callback does the same
//! trivial work (`x + 1`), also through a `callgate::Closure`
//! (`cthread.closure_ns`; `cthread.closure_concurrent_ns` made with
//! `Closure::concurrent`) and a `#[user_data]` parameter
//! (`cthread.user_data_ns`), each handed to C as a function and its data
//! pointer; `cthread.once_cycle_ns` and `cthread.closure_cycle_ns` make,
//! call and free a closure in every call.
//! Each callback is measured in three places: the
//! `callgate-bench-fixture` `cdylib` (`fixture/`) loaded with `dlopen` (the
//! hard case, and the figures `--json` reports under the original keys),
//! linked into this binary (`linked.*`), and the `cdylib` built with
//! `--cfg callgate_portable_tls` (`portable_tls.*`). Four more builds of
//! the `cdylib`, whose code is shifted by N = 0, 16, 32 and 48 bytes of
//! padding, give the boundary's cost at each 16-byte placement within a
//! 64-byte line (`placement.at_N.*`). Trampolines are 64-byte aligned
//! where the build can do it (x86-64 Linux), so there the padding moves
//! the code around them but not `bench_bound` itself; the report says
//! where each build's `bench_bound` landed, read from its address.
//! The `cdylib` and the padded builds are loaded first, so their TLS blocks
//! are in glibc's static TLS reserve; the `*_dynamic_tls_ns` rows
//! (`cthread.{raw,bound,local,per_call,per_call_raw}_dynamic_tls_ns`, their
//! per-round differences, and `first_call{,.raw}_dynamic_tls_ns`) are those
//! of a copy of the `cdylib` loaded after further copies filled that
//! reserve, so its TLS block (callgate's slot with it) is in dynamic TLS.
//! Their floor, on x86-64 Linux, is `cthread.c_tls_read_dynamic_tls_ns`: a
//! C function that reads a thread-local through its TLS descriptor, in a
//! library of its own loaded after that copy (`c/tls_read.c`), and
//! `cthread.bound_minus_c_tls_read_dynamic_tls_ns` the bound callback over
//! it, per round; `first_call.c_tls_read_dynamic_tls_ns` is the same read
//! as a new thread's first (glibc allocates the thread's block of that
//! library then, as it does the copy's on the callback's first call), and
//! `first_call.c_bind_dynamic_tls_ns` the least a first call does in C
//! (as `first_call.c_bind_ns`) with its slot in that library's block; the
//! callback's first call over each, per round, is
//! `first_call_minus_c_tls_read_dynamic_tls_ns` and
//! `first_call_minus_c_bind_dynamic_tls_ns`.
//!
//! Figures that are compared are measured side by side: the single-thread
//! call costs in blocks of about 100 µs taking turns on one thread (a
//! sample is the median over its 100 blocks, so a block that lost its CPU
//! for a while does not count), one thread against two in alternating
//! blocks. Every row gets one sample per round and the rounds go over all
//! rows, so a slow phase of the machine spreads over all of them; the
//! report gives the min, median and max of the samples, and how much of the
//! machine other processes used meanwhile. A calibration row, a fixed chain
//! of dependent additions in C (`machine.calibration_ns`), takes turns with
//! the call costs: where its samples spread, or many of its blocks run slow
//! (`machine.slow_blocks_pct`), the machine changed speed during the run.
//! The per-round differences `cthread.bound_minus_raw_ns` and
//! `cthread.local_minus_bound_ns` are also split by that speed, block by
//! block (`*_fast_ns`, `*_slow_ns`): the medians of the differences over
//! the cycles whose calibration block ran within 15 % of the run's
//! fastest so far, and over the others.
//!
//! A new thread's first call is timed beside a plain function's, the same
//! work written in C and one thread-local store in C
//! (`first_call{,.raw,.c_bind,.c_tls}_ns`), on threads the scheduler
//! places, with the share of them that ran on the CPU of the thread that
//! created them (`first_call.on_creator_cpu_pct`: it differs from one
//! sample to the next) and the callback's and the C version's first calls
//! on those threads and on the others, apart
//! (`first_call{,.c_bind}_{on,off}_creator_cpu_ns`). The callback's and
//! the C version's are timed again in two fixed placements: with the
//! benchmark's thread and every thread it creates held on one CPU
//! (`first_call.one_cpu_ns`, `first_call.c_bind_one_cpu_ns`), where each
//! thread starts where the one before it exited, so the gap between the
//! two rows is the first call's own work, without lines fetched from
//! another CPU; and with each thread on another CPU than the thread that
//! created it and the thread before it (`first_call.other_cpu_ns`,
//! `first_call.c_bind_other_cpu_ns`), where every line the call finds
//! written comes from another CPU.
//!
//! The fixture builds are made with cargo on start (same profile as this
//! binary); set `CALLGATE_BENCH_FIXTURE=/path/to/lib.so` to load another
//! build (the padded and portable builds are then skipped).

mod args;
mod builds;
mod checks;
mod env;
mod fixture;
mod go;
mod harness;
mod library;
mod linked;
mod load;
mod markdown;
mod plan;
mod report;

use std::path::Path;
use std::process::ExitCode;

use args::{Command, Output, USAGE, parse_args, run_loop};
use builds::{load_fixture, load_placements, load_portable_tls, reserve_static_tls};
use checks::{checks, local_conflict_warnings};
use harness::{CstrFn, IntFn, SliceFn, WithData};
use plan::{Job, Place};
use report::{NO_PLACE, Row, Summary};

/// The benchmark callbacks of one place (the `cdylib` or this binary).
#[derive(Clone, Copy)]
pub struct Callbacks {
    /// A plain `extern "C" fn`, no callgate: the floor.
    pub raw: IntFn,
    /// The floor for `cstr`: a plain `extern "C" fn` doing the same `&CStr`
    /// conversion.
    pub raw_cstr: CstrFn,
    /// `#[c_callback]`, thread bound.
    pub bound: IntFn,
    /// `#[c_callback(attach = per_call)]`.
    pub per_call: IntFn,
    /// `#[c_callback]` with one `#[local]` parameter.
    pub local: IntFn,
    /// `#[c_callback]` with one `&CStr` parameter.
    pub cstr: CstrFn,
    /// The floor for `sum`: a plain `extern "C" fn` summing the bytes of
    /// `(data, data_len)`.
    pub raw_sum: SliceFn,
    /// `#[c_callback]` with one `&[u8]` parameter, summing its bytes.
    pub sum: SliceFn,
    /// A `callgate::Closure::new` closure (calls take turns) returning
    /// `x + 1`, and its data.
    pub closure: WithData,
    /// The same closure made with `callgate::Closure::concurrent` (calls
    /// may run in parallel), and its data.
    pub closure_concurrent: WithData,
    /// Makes a `callgate::OnceClosure` returning `x + 1` and calls it once
    /// through its C function, which frees it (its data is unused).
    pub once_cycle: WithData,
    /// Makes a `callgate::Closure::new` closure returning `x + 1`, hands
    /// it to C, calls it once and frees it (its data is unused).
    pub closure_cycle: WithData,
    /// A plain `extern "C" fn` that locks a `std::sync::Mutex` of its own,
    /// adds `x` to the total it guards and returns `x + 1`: the floor for
    /// calls that take turns (its data is unused).
    pub mutex: WithData,
    /// `#[c_callback]` with a `#[user_data]` parameter, and the state to
    /// pass it.
    pub user_data: WithData,
}

/// How much slower than its fastest sample the calibration chain may get
/// before the report says the machine changed speed during the run.
const CALIBRATION_SPREAD: f64 = 1.15;

/// The share of the calibration chain's blocks in one sample, in percent,
/// that may run slow before the report says the machine changed speed.
const SLOW_BLOCKS_PCT: f64 = 10.0;

fn main() -> ExitCode {
    let result = match parse_args(std::env::args().skip(1)) {
        Err(message) => {
            eprintln!("callgate-bench: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
        Ok(Command::Help) => {
            println!("{USAGE}");
            Ok(())
        }
        Ok(Command::Loop {
            callback,
            calls,
            linked,
        }) => {
            let callbacks = if linked {
                Ok(linked::callbacks())
            } else {
                load_fixture().map(|(callbacks, _, _)| callbacks)
            };
            callbacks.and_then(|callbacks| run_loop(&callbacks, &callback, calls))
        }
        Ok(Command::Measure {
            output,
            rounds,
            save_json,
        }) => fixture::locate().and_then(|path| {
            reserve_static_tls(&path)?;
            measure(output, rounds, save_json.as_deref())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("callgate-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The whole benchmark, `rounds` samples per row, reported as `output`
/// says, and as JSON to `save_json` too if given.
fn measure(output: Output, rounds: usize, save_json: Option<&Path>) -> Result<(), String> {
    let (cdylib, tls_place, path) = load_fixture()?;
    let mut notes = Vec::new();
    let mut places = vec![
        Place {
            name: "cdylib",
            json_prefix: "",
            callbacks: cdylib,
        },
        Place {
            name: "binary",
            json_prefix: "linked.",
            callbacks: linked::callbacks(),
        },
    ];
    match load_portable_tls() {
        Ok(callbacks) => places.push(Place {
            name: "portable_tls",
            json_prefix: "portable_tls.",
            callbacks,
        }),
        Err(note) => notes.push(note),
    }
    let mut placement_notes = Vec::new();
    let mut placement_paths = Vec::new();
    let placements =
        load_placements(&mut placement_notes, &mut placement_paths).unwrap_or_else(|note| {
            notes.push(note);
            Vec::new()
        });
    notes.extend(placement_notes);
    let go = go::load().map_err(|note| notes.push(note)).ok();
    // Last, once the builds above have what static TLS they get.
    let dynamic_tls = fixture::load_in_dynamic_tls(&path)
        .map_err(|e| notes.push(format!("dynamic TLS rows skipped: {e}")))
        .ok();
    // After that copy: the reserve is full.
    let floors = dynamic_tls.as_ref().and_then(|_| {
        fixture::load_dynamic_floors()
            .map_err(|e| notes.push(format!("the C floors in dynamic TLS skipped: {e}")))
            .ok()
    });
    for note in &notes {
        eprintln!("callgate-bench: {note}");
    }
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);

    let plural = if rounds == 1 { "" } else { "s" };
    eprintln!(
        "callgate-bench: measuring ({rounds} round{plural} over all rows, then the environment)…"
    );
    let start = load::CpuClock::now();
    let plan = plan::plan(
        &places,
        &placements,
        go,
        dynamic_tls.as_ref().map(|(callbacks, _)| callbacks),
        floors,
    );
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); plan.rows.specs().len()];
    for round in 0..rounds {
        let mut run = |job: &Job| {
            let values = job.run(&plan.rows);
            assert_eq!(values.len(), job.rows().len(), "one value per row of a job");
            for (&row, value) in job.rows().iter().zip(values) {
                samples[row].push(value);
            }
        };
        // Alternate the order so no job always runs right after another.
        if round % 2 == 0 {
            plan.jobs.iter().for_each(&mut run);
        } else {
            plan.jobs.iter().rev().for_each(&mut run);
        }
    }
    for difference in &plan.differences {
        samples[difference.row] = samples[difference.minuend]
            .iter()
            .zip(&samples[difference.subtrahend])
            .map(|(a, b)| a - b)
            .collect();
    }
    // Every C thread has been joined: nothing else touches the environment.
    let environment = env::measure(rounds);
    let interference = start
        .zip(load::CpuClock::now())
        .map(|(start, end)| start.interference(&end, cpus));

    // A row split by the machine's speed has no sample for a round in
    // which no block ran at that speed (NaN), and none at all if no round
    // had one: then the row is left out.
    let mut rows: Vec<Row> = plan
        .rows
        .specs()
        .iter()
        .zip(&samples)
        .filter_map(|(spec, samples)| {
            let samples: Vec<f64> = samples.iter().copied().filter(|v| !v.is_nan()).collect();
            (!samples.is_empty()).then(|| Row {
                key: spec.key.clone(),
                place: spec.place.clone(),
                unit: spec.unit,
                summary: Summary::of(&samples),
                json: spec.json.clone(),
            })
        })
        .collect();
    rows.extend(
        environment
            .into_iter()
            .map(|(key, [min, median, max])| Row {
                json: Some(key.clone()),
                key,
                place: NO_PLACE.to_owned(),
                unit: "ns",
                summary: Summary { min, median, max },
            }),
    );
    let calibration = rows
        .iter()
        .find(|row| row.key == plan::CALIBRATION)
        .map(|row| row.summary)
        .expect("the calibration row is measured");
    let spread = calibration.max / calibration.min;
    let slow_blocks = rows
        .iter()
        .find(|row| row.key == plan::SLOW_BLOCKS)
        .map(|row| row.summary)
        .expect("the calibration row is measured");
    let mut extra = vec![
        ("machine.calibration_min_ns".to_owned(), calibration.min),
        ("machine.calibration_max_ns".to_owned(), calibration.max),
        ("machine.calibration_spread".to_owned(), spread),
        ("machine.slow_blocks_max_pct".to_owned(), slow_blocks.max),
    ];
    if let Some(worst) = placements
        .iter()
        .map(|placement| {
            let key = format!("{}.bound_minus_raw_ns", placement.key());
            rows.iter()
                .find(|row| row.key == key)
                .map(|row| row.summary.median)
        })
        .collect::<Option<Vec<f64>>>()
        .and_then(|medians| medians.into_iter().reduce(f64::max))
    {
        extra.push(("placement.worst_bound_minus_raw_ns".to_owned(), worst));
    }
    extra.push((
        "placement.cdylib_bound_offset".to_owned(),
        (cdylib.bound as usize % 64) as f64,
    ));

    let mut warnings = Vec::new();
    // A build in static TLS whose fast path stayed closed measured the
    // out-of-line path in every row: say so, rather than let its rows pass
    // for the fast path's.
    let mut builds = vec![("the cdylib".to_owned(), path.clone(), tls_place)];
    builds.extend(
        placement_paths
            .iter()
            .map(|(pad, path, place)| (format!("the build padded by {pad}"), path.clone(), *place)),
    );
    for (build, path, place) in builds {
        if place == fixture::TlsPlace::Static && fixture::fast_path_word(&path)? == Some(0) {
            warnings.push(format!(
                "warning: the fast path of {build} was closed at the end of the run (its static \
                 offset word is 0), so its rows measured the out-of-line path"
            ));
        }
    }
    warnings.extend(local_conflict_warnings(&rows));
    if let Some(i) = interference.filter(|i| i.others + i.steal > 0.05) {
        warnings.push(format!(
            "warning: other processes used {:.0}% of the CPUs during the run (steal {:.0}%); \
             the figures may be off, rerun on a quiet machine",
            i.others * 100.0,
            i.steal * 100.0
        ));
    }
    let phases = if spread > CALIBRATION_SPREAD || slow_blocks.max > SLOW_BLOCKS_PCT {
        warnings.push(format!(
            "warning: the calibration chain's samples spread {spread:.2}×, and up to {:.0}% of \
             its blocks in a sample ran slow: the machine changed speed during the run (a \
             shared core, a lower clock, preemption); trust the medians, and compare rows \
             measured side by side",
            slow_blocks.max
        ));
        "the machine changed speed during the run"
    } else {
        "the machine kept its speed during the run"
    };
    let others = match interference {
        Some(i) => format!(
            "other processes used {:.1}% of the CPUs during the run (steal {:.1}%)",
            i.others * 100.0,
            i.steal * 100.0
        ),
        None => "the load of other processes is unknown".to_owned(),
    };
    if output != Output::Table {
        for warning in &warnings {
            eprintln!("callgate-bench: {warning}");
        }
    }
    if let Some(path) = save_json {
        std::fs::write(path, format!("{}\n", report::json(&rows, &extra)))
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    }
    if output == Output::Json {
        println!("{}", report::json(&rows, &extra));
        return Ok(());
    }
    if output == Output::Markdown {
        let go_version = go.and_then(|_| go::version());
        let about = format!(
            "One run of `callgate-bench --markdown`, {rounds} round{plural}: {} build, {}, \
             glibc {}{}, {cpus} CPUs reporting {}; {others}. Calibration median {} ns \
             ({}–{} ns, spread {spread:.2}×); {:.0}% of the median sample's blocks ran slow, \
             {:.0}% at most: {phases}.",
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            env!("CALLGATE_BENCH_RUSTC"),
            glibc_version(),
            go_version.map_or_else(String::new, |v| format!(", Go {v}")),
            markdown::cpu(),
            markdown::figure(calibration.median),
            markdown::figure(calibration.min),
            markdown::figure(calibration.max),
            slow_blocks.median,
            slow_blocks.max,
        );
        print!("{}", markdown::tables(&rows, &placements, &about));
        return Ok(());
    }
    let offsets: Vec<String> = placements
        .iter()
        .map(|placement| {
            format!(
                "padding {} put it at byte {}",
                placement.pad, placement.offset
            )
        })
        .collect();
    let mut header = format!(
        "callgate-bench: {rounds} sample{plural} per row, {cpus} CPUs; {others}.\n\
         calibration chain: {} ns min, {} ns max over the samples (spread {spread:.2}); \
         {:.0}% of its blocks ran slow in the median sample, {:.0}% at most: {phases}.\n\
         C pthreads call each callback through a volatile function pointer.\n\
         callbacks in: cdylib = {} loaded with dlopen ({} TLS, bench_bound at byte {} of its \
         64-byte line); binary = linked into this program; portable_tls = the cdylib built \
         with --cfg callgate_portable_tls; placement.at_N = the cdylib with its code shifted \
         by N bytes of padding ({}){}.",
        report::number(calibration.min),
        report::number(calibration.max),
        slow_blocks.median,
        slow_blocks.max,
        path.display(),
        tls_place.name(),
        cdylib.bound as usize % 64,
        if offsets.is_empty() {
            "not measured".to_owned()
        } else {
            offsets.join(", ")
        },
        match &dynamic_tls {
            Some((_, copies)) => format!(
                "; *_dynamic_tls_ns: copy {copies} of the cdylib, the first to find glibc's \
                 static TLS reserve full"
            ),
            None => String::new(),
        },
    );
    for line in notes.iter().chain(&warnings) {
        header = format!("{header}\n{line}");
    }
    let names: Vec<&str> = places.iter().map(|place| place.name).collect();
    let checks = checks(
        &rows,
        &names,
        &placements,
        go.is_some(),
        dynamic_tls.is_some(),
    );
    print!("{}", report::table(&header, &rows, &checks));
    Ok(())
}

/// The version of the C library the benchmark runs with.
fn glibc_version() -> String {
    // SAFETY: `gnu_get_libc_version` returns a static NUL-terminated
    // string.
    unsafe { core::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) }
        .to_string_lossy()
        .into_owned()
}
