//! `callgate-bench`: what a call from a C thread into Rust costs through
//! callgate, next to the same call without it.
//!
//! ```sh
//! cargo run --release -p callgate-bench            # a table
//! cargo run --release -p callgate-bench -- --json  # medians as JSON
//! ```
//!
//! Every call comes from a real `pthread_create` thread of the C harness
//! (`c/bench.c`, compiled by the build script) through a `volatile`
//! function pointer, so nothing is inlined; every callback does the same
//! trivial work (`x + 1`). Each callback is measured twice: in the
//! `callgate-bench-fixture` `cdylib` (`fixture/`) loaded with `dlopen` (the
//! hard case, and the figures `--json` reports) and linked into this
//! binary. The `cdylib` is loaded first, so its TLS block is in glibc's
//! static TLS reserve; `cthread.{raw,bound}_dynamic_tls_ns` are the raw and
//! bound calls of a copy of it loaded after further copies filled that
//! reserve, so its TLS block (callgate's slot with it) is in dynamic TLS.
//!
//! Figures that are compared are measured side by side: the single-thread
//! call costs in blocks of about 100 µs taking turns on one thread, one
//! thread against two in alternating blocks. Every row gets one sample per
//! round and the rounds go over all rows, so a slow phase of the machine
//! spreads over all of them; the report gives the min, median and max of
//! the samples, and how much of the machine other processes used meanwhile.
//!
//! The fixture is built with cargo on start (same profile as this binary);
//! set `CALLGATE_BENCH_FIXTURE=/path/to/lib.so` to load another build.

mod env;
mod fixture;
mod harness;
mod linked;
mod load;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use harness::{Block, Callback, CstrFn, IntFn};
use report::{Check, NO_PLACE, Row, Summary, Target};

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
}

/// Samples per row: the median of an odd count is one real sample.
const ROUNDS: usize = 21;
/// How long one sample of a call loop should take.
const SAMPLE_NS: f64 = 10_000_000.0;
/// How long one block of calls should take where blocks of different
/// callbacks take turns on one thread.
const BLOCK_NS: f64 = 100_000.0;
/// How long one block of calls should take where one thread and two take
/// turns (longer: the threads meet at a barrier between blocks).
const SCALING_BLOCK_NS: f64 = 500_000.0;
/// Threads created for one `first_call_ns` sample.
const FIRST_CALL_THREADS: usize = 200;
/// Threads created for one `churn.*` sample.
const CHURN_THREADS: usize = 400;

/// The rows in report order: key and unit. Each is measured for every
/// place; `--json` reports the `cdylib` ones except `cthread.raw_cstr_ns`.
const ROWS: [(&str, &str); 13] = [
    ("cthread.raw_ns", "ns"),
    ("cthread.raw_cstr_ns", "ns"),
    ("cthread.bound_ns", "ns"),
    ("cthread.per_call_ns", "ns"),
    ("cthread.local_ns", "ns"),
    ("cthread.cstr_ns", "ns"),
    ("scaling.raw_1t_ops", "calls/s"),
    ("scaling.raw_2t_ops", "calls/s"),
    ("scaling.bound_1t_ops", "calls/s"),
    ("scaling.bound_2t_ops", "calls/s"),
    ("churn.create_join_us", "µs/thread"),
    ("churn.create_callback_join_us", "µs/thread"),
    ("first_call_ns", "ns"),
];

/// Rows measured for the `cdylib` place only: a copy of the fixture loaded
/// after the static TLS reserve filled up, so its TLS block (callgate's
/// slot included) is in dynamic TLS; its raw call is the floor.
const DYNAMIC_TLS_ROWS: [(&str, &str); 2] = [
    ("cthread.raw_dynamic_tls_ns", "ns"),
    ("cthread.bound_dynamic_tls_ns", "ns"),
];

/// How a job measures its rows; one run gives one sample of each.
enum Probe {
    /// Nanoseconds per call of each callback, on one thread, in blocks of
    /// the given number of calls taking turns.
    Interleaved(Vec<(Callback, i64)>),
    /// Nanoseconds per call on a thread of its own, this many calls (a
    /// per-call callback on a thread that a bound one attached would find
    /// it attached, so it cannot take turns with them).
    Latency(Callback, i64),
    /// Calls per second of one thread and of two, in alternating blocks of
    /// this many calls per thread.
    Scaling(IntFn, i64),
    /// Mean nanoseconds of a new thread's first call.
    FirstCall(IntFn),
    /// Microseconds per thread to create it, make one call, exit and join.
    Churn(IntFn),
}

/// A probe and the rows (indexes into the report) it fills, in the order
/// of its values.
struct Job {
    probe: Probe,
    rows: Vec<usize>,
}

impl Job {
    /// Runs the probe once; one value per row.
    fn run(&self, names: &[String]) -> Vec<f64> {
        let name = &*names[self.rows[0]];
        match &self.probe {
            Probe::Interleaved(callbacks) => {
                let blocks: Vec<Block<'_>> = callbacks
                    .iter()
                    .zip(&self.rows)
                    .map(|(&(callback, calls), &row)| Block {
                        name: &names[row],
                        callback,
                        calls,
                    })
                    .collect();
                harness::interleaved(&blocks, (SAMPLE_NS / BLOCK_NS) as usize)
            }
            &Probe::Latency(callback, calls) => {
                vec![harness::call_loop(name, callback, calls) / calls as f64]
            }
            &Probe::Scaling(cb, calls) => {
                let cycles = (SAMPLE_NS / SCALING_BLOCK_NS) as usize;
                let rates = harness::scaling(name, cb, calls, cycles);
                vec![rates.one_thread, rates.two_threads]
            }
            &Probe::FirstCall(cb) => {
                let firsts = harness::first_calls(name, cb, FIRST_CALL_THREADS);
                vec![firsts.iter().sum::<f64>() / firsts.len() as f64]
            }
            &Probe::Churn(cb) => {
                let ns = harness::churn(name, cb, CHURN_THREADS);
                vec![ns / CHURN_THREADS as f64 / 1000.0]
            }
        }
    }
}

/// How many calls of `callback` take about `target_ns` on one thread.
fn calls_taking(name: &str, callback: Callback, target_ns: f64) -> i64 {
    let mut calls = 10_000_i64;
    let ns = loop {
        let ns = harness::call_loop(name, callback, calls);
        if ns >= 2_000_000.0 || calls >= 100_000_000 {
            break ns;
        }
        calls *= 4;
    };
    ((target_ns * calls as f64 / ns) as i64).clamp(100, 100_000_000)
}

/// The jobs that measure every row of every place; `row(key, place)` is the
/// row's index in the report.
fn plan(places: &[(&'static str, Callbacks)], row: impl Fn(&str, usize) -> usize) -> Vec<Job> {
    let mut jobs = Vec::new();
    let (mut turns, mut turn_rows) = (Vec::new(), Vec::new());
    for (place, (_, c)) in places.iter().enumerate() {
        for (key, callback) in [
            ("cthread.raw_ns", Callback::Int(c.raw)),
            ("cthread.raw_cstr_ns", Callback::Cstr(c.raw_cstr)),
            ("cthread.bound_ns", Callback::Int(c.bound)),
            ("cthread.local_ns", Callback::Int(c.local)),
            ("cthread.cstr_ns", Callback::Cstr(c.cstr)),
        ] {
            turns.push((callback, calls_taking(key, callback, BLOCK_NS)));
            turn_rows.push(row(key, place));
        }
        let per_call = Callback::Int(c.per_call);
        jobs.push(Job {
            probe: Probe::Latency(
                per_call,
                calls_taking("cthread.per_call_ns", per_call, SAMPLE_NS),
            ),
            rows: vec![row("cthread.per_call_ns", place)],
        });
        for (name, cb) in [("raw", c.raw), ("bound", c.bound)] {
            let one = format!("scaling.{name}_1t_ops");
            let calls = calls_taking(&one, Callback::Int(cb), SCALING_BLOCK_NS);
            jobs.push(Job {
                probe: Probe::Scaling(cb, calls),
                rows: vec![
                    row(&one, place),
                    row(&format!("scaling.{name}_2t_ops"), place),
                ],
            });
        }
        jobs.push(Job {
            probe: Probe::Churn(c.raw),
            rows: vec![row("churn.create_join_us", place)],
        });
        jobs.push(Job {
            probe: Probe::Churn(c.bound),
            rows: vec![row("churn.create_callback_join_us", place)],
        });
        jobs.push(Job {
            probe: Probe::FirstCall(c.bound),
            rows: vec![row("first_call_ns", place)],
        });
    }
    jobs.insert(
        0,
        Job {
            probe: Probe::Interleaved(turns),
            rows: turn_rows,
        },
    );
    jobs
}

/// The derived figures and their targets.
fn checks(rows: &[Row], places: &[&'static str]) -> Vec<Check> {
    let median = |key: &str, place: &str| {
        rows.iter()
            .find(|row| row.key == key && row.place == place)
            .map(|row| row.summary.median)
            .unwrap_or_else(|| panic!("no row {key} for {place}"))
    };
    let figure = |what, unit, target, compute: &dyn Fn(&str) -> f64| Check {
        what,
        values: places
            .iter()
            .map(|&place| (place, compute(place)))
            .collect(),
        unit,
        target,
    };
    vec![
        figure(
            "cthread.bound_ns − cthread.raw_ns",
            " ns",
            Some(Target::AtMost(0.5)),
            &|p| median("cthread.bound_ns", p) - median("cthread.raw_ns", p),
        ),
        Check {
            what: "cthread.bound_dynamic_tls_ns − cthread.raw_dynamic_tls_ns",
            values: vec![(
                "cdylib",
                median("cthread.bound_dynamic_tls_ns", "cdylib")
                    - median("cthread.raw_dynamic_tls_ns", "cdylib"),
            )],
            unit: " ns",
            target: None,
        },
        figure("cthread.per_call_ns / cthread.bound_ns", "", None, &|p| {
            median("cthread.per_call_ns", p) / median("cthread.bound_ns", p)
        }),
        figure("cthread.local_ns − cthread.bound_ns", " ns", None, &|p| {
            median("cthread.local_ns", p) - median("cthread.bound_ns", p)
        }),
        figure(
            "cthread.cstr_ns − cthread.raw_cstr_ns",
            " ns",
            None,
            &|p| median("cthread.cstr_ns", p) - median("cthread.raw_cstr_ns", p),
        ),
        figure(
            "scaling.bound_2t_ops / scaling.bound_1t_ops",
            "",
            Some(Target::AtLeast(1.8)),
            &|p| median("scaling.bound_2t_ops", p) / median("scaling.bound_1t_ops", p),
        ),
        figure("scaling.raw_2t_ops / scaling.raw_1t_ops", "", None, &|p| {
            median("scaling.raw_2t_ops", p) / median("scaling.raw_1t_ops", p)
        }),
        figure(
            "churn.create_callback_join_us / churn.create_join_us",
            "",
            Some(Target::AtMost(1.1)),
            &|p| median("churn.create_callback_join_us", p) / median("churn.create_join_us", p),
        ),
        figure("first_call_ns", " ns", Some(Target::AtMost(1000.0)), &|p| {
            median("first_call_ns", p)
        }),
        Check {
            what: "env.remove_loop_10000_ns / env.clear_10000_ns",
            values: vec![(
                NO_PLACE,
                median("env.remove_loop_10000_ns", NO_PLACE)
                    / median("env.clear_10000_ns", NO_PLACE),
            )],
            unit: "",
            target: None,
        },
    ]
}

const USAGE: &str = "usage: callgate-bench [--json]
       callgate-bench --loop <callback> [<calls>] [--linked]

Measures callbacks from C threads into Rust, with and without callgate, and
prints a table (or, with --json, one JSON object of the medians).

--loop makes <calls> (default 10000000) calls of one callback of the cdylib
(--linked: of this binary) from one C thread and prints the time per call:
a workload for profilers (perf, valgrind --tool=callgrind). <callback> is
raw, raw_cstr, bound, per_call, local or cstr.

CALLGATE_BENCH_FIXTURE=<path> loads that build of the cdylib fixture instead
of building it with cargo.";

/// What the command line asks for.
enum Command {
    /// The whole benchmark, as a table or as JSON.
    Measure { json: bool },
    /// One call loop of one callback, for profilers.
    Loop {
        callback: String,
        calls: i64,
        linked: bool,
    },
    /// Print the usage.
    Help,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut json = false;
    let mut linked = false;
    let mut looped: Option<(String, Option<i64>)> = None;
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" => json = true,
            "--linked" => linked = true,
            "-h" | "--help" => return Ok(Command::Help),
            "--loop" => {
                let callback = args.next().ok_or("--loop needs a callback name")?;
                let calls = match args.peek().map(|next| next.parse::<i64>()) {
                    Some(Ok(calls)) => {
                        args.next();
                        Some(calls)
                    }
                    _ => None,
                };
                looped = Some((callback, calls));
            }
            _ => return Err(format!("unknown argument `{arg}`")),
        }
    }
    Ok(match looped {
        Some((callback, calls)) => Command::Loop {
            callback,
            calls: calls.unwrap_or(10_000_000),
            linked,
        },
        None => Command::Measure { json },
    })
}

/// `--loop`: one call loop of one callback, for profilers.
fn run_loop(callbacks: &Callbacks, callback: &str, calls: i64) -> Result<(), String> {
    let chosen = match callback {
        "raw" => Callback::Int(callbacks.raw),
        "raw_cstr" => Callback::Cstr(callbacks.raw_cstr),
        "bound" => Callback::Int(callbacks.bound),
        "per_call" => Callback::Int(callbacks.per_call),
        "local" => Callback::Int(callbacks.local),
        "cstr" => Callback::Cstr(callbacks.cstr),
        _ => return Err(format!("unknown callback `{callback}`")),
    };
    let ns = harness::call_loop(callback, chosen, calls);
    println!(
        "{callback}: {calls} calls, {:.3} ns per call",
        ns / calls as f64
    );
    Ok(())
}

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
        Ok(Command::Measure { json }) => measure(json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("callgate-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Finds (or builds) and loads the `cdylib` fixture; returns its callbacks,
/// where its TLS block went, and where it is.
fn load_fixture() -> Result<(Callbacks, fixture::TlsPlace, PathBuf), String> {
    let path = fixture::locate()?;
    let (callbacks, place) = fixture::load_placed(&path)?;
    Ok((callbacks, place, path))
}

/// The whole benchmark: prints the table, or with `json` the JSON object.
fn measure(json: bool) -> Result<(), String> {
    let (cdylib, tls_place, path) = load_fixture()?;
    let (dynamic_tls, copies) = fixture::load_in_dynamic_tls(&path)?;
    let places = [("cdylib", cdylib), ("binary", linked::callbacks())];
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);

    // Row `i * places + p` is measurement `i` for place `p`.
    // The rows after those are `DYNAMIC_TLS_ROWS`.
    let mut names: Vec<String> = ROWS
        .iter()
        .flat_map(|(key, _)| places.iter().map(move |_| (*key).to_owned()))
        .collect();
    let grid = names.len();
    names.extend(DYNAMIC_TLS_ROWS.iter().map(|(key, _)| (*key).to_owned()));
    let row = |key: &str, place: usize| {
        let i = ROWS.iter().position(|(k, _)| *k == key);
        i.unwrap_or_else(|| panic!("no row {key}")) * places.len() + place
    };
    eprintln!("callgate-bench: measuring ({ROUNDS} rounds over all rows, then the environment)…");
    let start = load::CpuClock::now();
    let mut jobs = plan(&places, row);
    // The dynamic-TLS copy takes turns with the other callbacks.
    if let Job {
        probe: Probe::Interleaved(turns),
        rows,
    } = &mut jobs[0]
    {
        for (i, callback) in [dynamic_tls.raw, dynamic_tls.bound].into_iter().enumerate() {
            let callback = Callback::Int(callback);
            turns.push((callback, calls_taking(&names[grid + i], callback, BLOCK_NS)));
            rows.push(grid + i);
        }
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); names.len()];
    for round in 0..ROUNDS {
        let mut run = |job: &Job| {
            for (&row, value) in job.rows.iter().zip(job.run(&names)) {
                samples[row].push(value);
            }
        };
        // Alternate the order so no job always runs right after another.
        if round % 2 == 0 {
            jobs.iter().for_each(&mut run);
        } else {
            jobs.iter().rev().for_each(&mut run);
        }
    }
    // Every C thread has been joined: nothing else touches the environment.
    let environment = env::measure(ROUNDS);
    let interference = start
        .zip(load::CpuClock::now())
        .map(|(start, end)| start.interference(&end, cpus));

    let mut rows: Vec<Row> = samples
        .iter()
        .enumerate()
        .map(|(i, samples)| {
            let ((key, unit), place) = if i < grid {
                (ROWS[i / places.len()], places[i % places.len()].0)
            } else {
                (DYNAMIC_TLS_ROWS[i - grid], "cdylib")
            };
            Row {
                key: key.to_owned(),
                place,
                unit,
                summary: Summary::of(samples),
                in_json: place == "cdylib" && key != "cthread.raw_cstr_ns",
            }
        })
        .collect();
    rows.extend(
        environment
            .into_iter()
            .map(|(key, [min, median, max])| Row {
                key,
                place: NO_PLACE,
                unit: "ns",
                summary: Summary { min, median, max },
                in_json: true,
            }),
    );
    let warning = interference.and_then(|i| {
        (i.others + i.steal > 0.05).then(|| {
            format!(
                "warning: other processes used {:.0}% of the CPUs during the run (steal {:.0}%); \
                 the figures may be off, rerun on a quiet machine",
                i.others * 100.0,
                i.steal * 100.0
            )
        })
    });
    if json {
        if let Some(warning) = &warning {
            eprintln!("callgate-bench: {warning}");
        }
        println!("{}", report::json(&rows));
        return Ok(());
    }
    let others = match interference {
        Some(i) => format!(
            "other processes used {:.1}% of the CPUs during the run (steal {:.1}%)",
            i.others * 100.0,
            i.steal * 100.0
        ),
        None => "the load of other processes is unknown".to_owned(),
    };
    let mut header = format!(
        "callgate-bench: {ROUNDS} samples per row, {cpus} CPUs; {others}.\n\
         C pthreads call each callback through a volatile function pointer.\n\
         callbacks in: cdylib = {} loaded with dlopen ({} TLS); binary = linked into this program;\n\
         *_dynamic_tls_ns: copy {copies} of the cdylib, loaded after {} copies filled glibc's static TLS reserve.",
        path.display(),
        match tls_place {
            fixture::TlsPlace::Static => "static",
            fixture::TlsPlace::Dynamic => "dynamic",
        },
        copies - 1,
    );
    if let Some(warning) = &warning {
        header = format!("{header}\n{warning}");
    }
    let checks = checks(&rows, &places.map(|(place, _)| place));
    print!("{}", report::table(&header, &rows, &checks));
    Ok(())
}
