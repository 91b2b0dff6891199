//! What the benchmark measures and how: the rows of the report and the jobs
//! that fill them, one sample of each row per round. How a job measures
//! its rows is in [`probe`].

mod probe;

use std::cell::Cell;

use crate::Callbacks;
use crate::fixture::DynamicFloors;
use crate::harness::{self, Callback, Cpus, IntFn};
use crate::report::NO_PLACE;
use probe::Probe;

/// How long one sample of a call loop should take.
const SAMPLE_NS: f64 = 10_000_000.0;
/// How long one block of calls should take where blocks of different
/// callbacks take turns on one thread.
const BLOCK_NS: f64 = 100_000.0;
/// How long one block of calls lasts where one thread and two take turns
/// (longer: the threads meet at a barrier between blocks).
const SCALING_BLOCK_NS: f64 = 500_000.0;
/// How long the calls between two looks at the clock should take in those
/// blocks: short against the block, so the two threads of a block stop
/// within this of each other, and long against a look at the clock.
const SCALING_CHUNK_NS: f64 = 4_000.0;
/// Threads created for one `first_call_ns` sample.
const FIRST_CALL_THREADS: usize = 200;
/// Threads created for one `churn.*` sample.
const CHURN_THREADS: usize = 400;

/// The rows measured for every [`Place`], in report order: key and unit.
const PLACE_ROWS: [(&str, &str); 55] = [
    ("cthread.raw_ns", "ns"),
    ("cthread.raw_cstr_ns", "ns"),
    ("cthread.bound_ns", "ns"),
    ("cthread.bound_minus_raw_ns", "ns"),
    ("cthread.bound_minus_raw_fast_ns", "ns"),
    ("cthread.bound_minus_raw_slow_ns", "ns"),
    ("cthread.per_call_ns", "ns"),
    ("cthread.per_call_raw_ns", "ns"),
    ("cthread.per_call_minus_raw_ns", "ns"),
    ("cthread.local_ns", "ns"),
    ("cthread.local_minus_bound_ns", "ns"),
    ("cthread.local_minus_bound_fast_ns", "ns"),
    ("cthread.local_minus_bound_slow_ns", "ns"),
    ("cthread.cstr_ns", "ns"),
    ("cthread.closure_ns", "ns"),
    ("cthread.closure_concurrent_ns", "ns"),
    ("cthread.once_cycle_ns", "ns"),
    ("cthread.closure_cycle_ns", "ns"),
    ("cthread.user_data_ns", "ns"),
    ("cthread.raw_sum_ns", "ns"),
    ("cthread.sum_ns", "ns"),
    ("scaling.raw_1t_ops", "calls/s"),
    ("scaling.raw_2t_ops", "calls/s"),
    ("scaling.bound_1t_ops", "calls/s"),
    ("scaling.bound_2t_ops", "calls/s"),
    ("scaling.raw_2t_1t", "×"),
    ("scaling.bound_2t_1t", "×"),
    ("scaling.closure_concurrent_1t_ops", "calls/s"),
    ("scaling.closure_concurrent_2t_ops", "calls/s"),
    ("scaling.closure_concurrent_2t_1t", "×"),
    ("scaling.mutex_1t_ops", "calls/s"),
    ("scaling.mutex_2t_ops", "calls/s"),
    ("scaling.mutex_2t_1t", "×"),
    ("scaling.closure_1t_ops", "calls/s"),
    ("scaling.closure_2t_ops", "calls/s"),
    ("scaling.closure_2t_1t", "×"),
    ("churn.create_join_us", "µs/thread"),
    ("churn.create_callback_join_us", "µs/thread"),
    ("churn.create_callback_join_ratio", "×"),
    ("first_call_ns", "ns"),
    ("first_call.raw_ns", "ns"),
    ("first_call.c_bind_ns", "ns"),
    ("first_call.c_tls_ns", "ns"),
    ("first_call.on_creator_cpu_pct", "%"),
    ("first_call.on_creator_cpu_ns", "ns"),
    ("first_call.off_creator_cpu_ns", "ns"),
    ("first_call.c_bind_on_creator_cpu_ns", "ns"),
    ("first_call.c_bind_off_creator_cpu_ns", "ns"),
    ("first_call.one_cpu_ns", "ns"),
    ("first_call.c_bind_one_cpu_ns", "ns"),
    ("first_call.other_cpu_ns", "ns"),
    ("first_call.c_bind_other_cpu_ns", "ns"),
    ("first_call.minus_c_bind_ns", "ns"),
    ("first_call.one_cpu_minus_c_bind_ns", "ns"),
    ("first_call.other_cpu_minus_c_bind_ns", "ns"),
];

/// The calibration row's key: a fixed chain of dependent additions in C,
/// taking turns with the single-thread rows.
pub const CALIBRATION: &str = "machine.calibration_ns";

/// The key of the share of the calibration chain's blocks that ran slow.
pub const SLOW_BLOCKS: &str = "machine.slow_blocks_pct";

/// A calibration block slower than this many times the sample's fastest
/// one ran on a slower machine (a busy core, a lower clock, a preemption).
const SLOW_BLOCK: f64 = 1.15;

/// The place of the Go rows.
pub const GO: &str = "go";

/// Where a set of benchmark callbacks lives.
pub struct Place {
    /// The name in the table's `callbacks` column.
    pub name: &'static str,
    /// What the place's `--json` keys start with (empty for the `cdylib`,
    /// whose keys are the benchmark's original ones).
    pub json_prefix: &'static str,
    /// The callbacks.
    pub callbacks: Callbacks,
}

/// A build of the `cdylib` fixture with its code moved by padding.
pub struct Placement {
    /// How many bytes of padding precede the fixture's code: where
    /// `bench_bound` would start within its 64-byte line if nothing
    /// aligned it.
    pub pad: usize,
    /// Where `bench_bound` did start within its 64-byte line, in bytes.
    pub offset: usize,
    /// The build's callbacks.
    pub callbacks: Callbacks,
}

impl Placement {
    /// The prefix of the placement's rows and `--json` keys.
    pub fn key(&self) -> String {
        format!("placement.at_{}", self.pad)
    }
}

/// One line of the report before it is measured.
pub struct RowSpec {
    /// The measurement's name.
    pub key: String,
    /// Where the callbacks live, or [`NO_PLACE`].
    pub place: String,
    /// The unit of the numbers.
    pub unit: &'static str,
    /// The row's `--json` key, if its median is reported there.
    pub json: Option<String>,
}

/// The rows of the report, in report order.
#[derive(Default)]
pub struct Rows {
    specs: Vec<RowSpec>,
}

impl Rows {
    /// Appends a row; returns its index.
    fn add(&mut self, key: &str, place: &str, unit: &'static str, json: Option<String>) -> usize {
        self.specs.push(RowSpec {
            key: key.to_owned(),
            place: place.to_owned(),
            unit,
            json,
        });
        self.specs.len() - 1
    }

    /// The index of the row `key` of `place`; panics if there is none.
    pub fn find(&self, key: &str, place: &str) -> usize {
        self.specs
            .iter()
            .position(|spec| spec.key == key && spec.place == place)
            .unwrap_or_else(|| panic!("no row {key} for {place}"))
    }

    /// The rows.
    pub fn specs(&self) -> &[RowSpec] {
        &self.specs
    }

    /// The row's name for messages.
    fn name(&self, row: usize) -> String {
        let spec = &self.specs[row];
        format!("{} ({})", spec.key, spec.place)
    }
}

/// A probe and the rows it fills, in the order of its values.
pub struct Job {
    probe: Probe,
    rows: Vec<usize>,
}

/// A row whose samples are the differences of two others' samples of the
/// same round (measured side by side, so a slow phase cancels out).
pub struct Difference {
    /// The row of the differences.
    pub row: usize,
    /// The row subtracted from.
    pub minuend: usize,
    /// The row subtracted.
    pub subtrahend: usize,
}

/// Everything one round measures.
pub struct Plan {
    /// The rows, in report order.
    pub rows: Rows,
    /// The jobs that fill the measured rows.
    pub jobs: Vec<Job>,
    /// The rows computed from others.
    pub differences: Vec<Difference>,
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

/// The single-thread rows measured for a copy of the `cdylib` in dynamic
/// TLS: its raw call (the floor), its bound callback and its `#[local]`
/// one. (Its per-call callback and first calls have jobs of their own.)
const DYNAMIC_TLS_ROWS: [&str; 3] = [
    "cthread.raw_dynamic_tls_ns",
    "cthread.bound_dynamic_tls_ns",
    "cthread.local_dynamic_tls_ns",
];

/// The rows and jobs for `places`, `placements`, the Go callback `go` if
/// there is one, the `cdylib` copy in dynamic TLS if there is one (with
/// `floors`, the C floors in dynamic TLS, if there are), and the
/// calibration chain. All single-thread call costs go into one job of
/// interleaved blocks, the calibration chain's among them, so every sample
/// of every row sees the same machine.
pub fn plan(
    places: &[Place],
    placements: &[Placement],
    go: Option<IntFn>,
    dynamic_tls: Option<&Callbacks>,
    floors: Option<DynamicFloors>,
) -> Plan {
    let mut rows = Rows::default();
    let calibration = rows.add(CALIBRATION, NO_PLACE, "ns", Some(CALIBRATION.to_owned()));
    let slow_blocks = rows.add(SLOW_BLOCKS, NO_PLACE, "%", Some(SLOW_BLOCKS.to_owned()));
    for (key, unit) in PLACE_ROWS {
        for place in places {
            let json =
                (key != "cthread.raw_cstr_ns").then(|| format!("{}{key}", place.json_prefix));
            rows.add(key, place.name, unit, json);
        }
    }
    let mut differences = Vec::new();
    let mut placement_rows = Vec::new();
    for placement in placements {
        let prefix = placement.key();
        let mut add = |what: &str| {
            let key = format!("{prefix}.{what}");
            rows.add(&key, "cdylib", "ns", Some(key.clone()))
        };
        let (raw, bound, difference) = (add("raw_ns"), add("bound_ns"), add("bound_minus_raw_ns"));
        differences.push(Difference {
            row: difference,
            minuend: bound,
            subtrahend: raw,
        });
        placement_rows.push((placement.callbacks, raw, bound));
    }

    let mut turns = vec![(
        Callback::Int(harness::calibration()),
        calibration,
        CALIBRATION.to_owned(),
    )];
    let mut jobs = Vec::new();
    let (mut pairs, mut phase_rows) = (Vec::new(), Vec::new());
    for place in places {
        let c = place.callbacks;
        let row = |key: &str| rows.find(key, place.name);
        for (key, callback) in [
            ("cthread.raw_ns", Callback::Int(c.raw)),
            ("cthread.raw_cstr_ns", Callback::Cstr(c.raw_cstr)),
            ("cthread.bound_ns", Callback::Int(c.bound)),
            ("cthread.local_ns", Callback::Int(c.local)),
            ("cthread.cstr_ns", Callback::Cstr(c.cstr)),
            ("cthread.closure_ns", Callback::Data(c.closure)),
            (
                "cthread.closure_concurrent_ns",
                Callback::Data(c.closure_concurrent),
            ),
            ("cthread.once_cycle_ns", Callback::Data(c.once_cycle)),
            ("cthread.closure_cycle_ns", Callback::Data(c.closure_cycle)),
            ("cthread.user_data_ns", Callback::Data(c.user_data)),
            ("cthread.raw_sum_ns", Callback::Slice(c.raw_sum)),
            ("cthread.sum_ns", Callback::Slice(c.sum)),
        ] {
            turns.push((callback, row(key), rows.name(row(key))));
        }
        // Rows that take turns on one thread, compared round by round, and
        // block by block split by the calibration chain's speed in the
        // same cycle: what a difference is while the machine runs fast,
        // and while it runs slow, from one run.
        let position = |row: usize| {
            turns
                .iter()
                .position(|turn| turn.1 == row)
                .expect("a row that takes turns")
        };
        for (difference, minuend, subtrahend) in [
            (
                "cthread.bound_minus_raw",
                "cthread.bound_ns",
                "cthread.raw_ns",
            ),
            (
                "cthread.local_minus_bound",
                "cthread.local_ns",
                "cthread.bound_ns",
            ),
        ] {
            let (minuend, subtrahend) = (row(minuend), row(subtrahend));
            differences.push(Difference {
                row: row(&format!("{difference}_ns")),
                minuend,
                subtrahend,
            });
            pairs.push((position(minuend), position(subtrahend)));
            phase_rows.push(row(&format!("{difference}_fast_ns")));
            phase_rows.push(row(&format!("{difference}_slow_ns")));
        }
        let per_call = Callback::Int(c.per_call);
        let raw = Callback::Int(c.raw);
        let (per_call_row, per_call_raw_row) =
            (row("cthread.per_call_ns"), row("cthread.per_call_raw_ns"));
        differences.push(Difference {
            row: row("cthread.per_call_minus_raw_ns"),
            minuend: per_call_row,
            subtrahend: per_call_raw_row,
        });
        jobs.push(Job {
            probe: Probe::Turns(vec![
                (
                    raw,
                    calls_taking(&rows.name(per_call_raw_row), raw, BLOCK_NS),
                ),
                (
                    per_call,
                    calls_taking(&rows.name(per_call_row), per_call, BLOCK_NS),
                ),
            ]),
            rows: vec![per_call_raw_row, per_call_row],
        });
        for (name, cb) in [
            ("raw", Callback::Int(c.raw)),
            ("bound", Callback::Int(c.bound)),
            ("closure_concurrent", Callback::Data(c.closure_concurrent)),
            // Calls that take turns: a `std::sync::Mutex` both threads
            // lock (the floor), and a closure whose two threads hand the
            // turn back and forth, one waiting for the other's end.
            ("mutex", Callback::Data(c.mutex)),
            ("closure", Callback::Data(c.closure)),
        ] {
            let one = row(&format!("scaling.{name}_1t_ops"));
            let calls = calls_taking(&rows.name(one), cb, SCALING_CHUNK_NS);
            jobs.push(Job {
                probe: Probe::Scaling(cb, calls),
                rows: vec![
                    one,
                    row(&format!("scaling.{name}_2t_ops")),
                    row(&format!("scaling.{name}_2t_1t")),
                ],
            });
        }
        jobs.push(Job {
            probe: Probe::Churn(vec![c.raw, c.bound]),
            rows: vec![
                row("churn.create_join_us"),
                row("churn.create_callback_join_us"),
                row("churn.create_callback_join_ratio"),
            ],
        });
        // The raw function, the same work in C and its floor (one
        // thread-local store) beside the callback.
        let (c_bind, c_tls): (IntFn, IntFn) = (harness::bench_c_bind, harness::bench_c_tls);
        jobs.push(Job {
            probe: Probe::FirstCalls(
                vec![c.bound, c.raw, c_bind, c_tls],
                Cpus::Any,
                Some(vec![0, 2]),
            ),
            rows: vec![
                row("first_call_ns"),
                row("first_call.raw_ns"),
                row("first_call.c_bind_ns"),
                row("first_call.c_tls_ns"),
                row("first_call.on_creator_cpu_pct"),
                row("first_call.on_creator_cpu_ns"),
                row("first_call.off_creator_cpu_ns"),
                row("first_call.c_bind_on_creator_cpu_ns"),
                row("first_call.c_bind_off_creator_cpu_ns"),
            ],
        });
        // The callback and the C version again, with every thread on one
        // CPU: each starts where the one before it exited and released its
        // context, so neither fetches lines from another CPU.
        jobs.push(Job {
            probe: Probe::FirstCalls(vec![c.bound, c_bind], Cpus::One, None),
            rows: vec![
                row("first_call.one_cpu_ns"),
                row("first_call.c_bind_one_cpu_ns"),
            ],
        });
        // And with every thread on the other CPU than the one that created
        // it and the one the thread before it exited on: everything the
        // call touches that is not its own comes from another CPU.
        jobs.push(Job {
            probe: Probe::FirstCalls(vec![c.bound, c_bind], Cpus::Other, None),
            rows: vec![
                row("first_call.other_cpu_ns"),
                row("first_call.c_bind_other_cpu_ns"),
            ],
        });
        // The callback's first call over the C version's, thread by thread
        // in the same samples, in each placement.
        for (difference, minuend, subtrahend) in [
            (
                "first_call.minus_c_bind_ns",
                "first_call_ns",
                "first_call.c_bind_ns",
            ),
            (
                "first_call.one_cpu_minus_c_bind_ns",
                "first_call.one_cpu_ns",
                "first_call.c_bind_one_cpu_ns",
            ),
            (
                "first_call.other_cpu_minus_c_bind_ns",
                "first_call.other_cpu_ns",
                "first_call.c_bind_other_cpu_ns",
            ),
        ] {
            differences.push(Difference {
                row: row(difference),
                minuend: row(minuend),
                subtrahend: row(subtrahend),
            });
        }
    }
    if let Some(c) = dynamic_tls {
        let add = |rows: &mut Rows, key: &str| rows.add(key, "cdylib", "ns", Some(key.to_owned()));
        let [raw, bound, local] = DYNAMIC_TLS_ROWS.map(|key| add(&mut rows, key));
        for (row, callback) in [(raw, c.raw), (bound, c.bound), (local, c.local)] {
            turns.push((Callback::Int(callback), row, rows.name(row)));
        }
        differences.push(Difference {
            row: add(&mut rows, "cthread.local_minus_bound_dynamic_tls_ns"),
            minuend: local,
            subtrahend: bound,
        });
        // The floor in dynamic TLS: C reading a thread-local through its
        // descriptor, in a library whose block is in dynamic TLS too.
        if let Some(floors) = floors {
            let row = add(&mut rows, "cthread.c_tls_read_dynamic_tls_ns");
            turns.push((Callback::Int(floors.read), row, rows.name(row)));
            differences.push(Difference {
                row: add(&mut rows, "cthread.bound_minus_c_tls_read_dynamic_tls_ns"),
                minuend: bound,
                subtrahend: row,
            });
        }
        // As for every place: a per-call callback takes turns with a raw
        // call on a thread of its own.
        let (per_call_raw, per_call) = (
            add(&mut rows, "cthread.per_call_raw_dynamic_tls_ns"),
            add(&mut rows, "cthread.per_call_dynamic_tls_ns"),
        );
        differences.push(Difference {
            row: add(&mut rows, "cthread.per_call_minus_raw_dynamic_tls_ns"),
            minuend: per_call,
            subtrahend: per_call_raw,
        });
        let (raw, per_call_cb) = (Callback::Int(c.raw), Callback::Int(c.per_call));
        jobs.push(Job {
            probe: Probe::Turns(vec![
                (raw, calls_taking(&rows.name(per_call_raw), raw, BLOCK_NS)),
                (
                    per_call_cb,
                    calls_taking(&rows.name(per_call), per_call_cb, BLOCK_NS),
                ),
            ]),
            rows: vec![per_call_raw, per_call],
        });
        let (first_call, first_raw) = (
            add(&mut rows, "first_call_dynamic_tls_ns"),
            add(&mut rows, "first_call.raw_dynamic_tls_ns"),
        );
        let mut first_calls = vec![c.bound, c.raw];
        let mut first_call_rows = vec![first_call, first_raw];
        // The floors of a first call there: a new thread's first read of
        // a thread-local in dynamic TLS, for which glibc allocates the
        // thread's block of the library (as it does the copy's), and the
        // least a first call does in C with its slot there.
        if let Some(floors) = floors {
            for (floor, key, difference) in [
                (
                    floors.read,
                    "first_call.c_tls_read_dynamic_tls_ns",
                    "first_call_minus_c_tls_read_dynamic_tls_ns",
                ),
                (
                    floors.bind,
                    "first_call.c_bind_dynamic_tls_ns",
                    "first_call_minus_c_bind_dynamic_tls_ns",
                ),
            ] {
                let row = add(&mut rows, key);
                first_calls.push(floor);
                first_call_rows.push(row);
                differences.push(Difference {
                    row: add(&mut rows, difference),
                    minuend: first_call,
                    subtrahend: row,
                });
            }
        }
        jobs.push(Job {
            probe: Probe::FirstCalls(first_calls, Cpus::Any, None),
            rows: first_call_rows,
        });
    }
    for (callbacks, raw, bound) in placement_rows {
        turns.push((Callback::Int(callbacks.raw), raw, rows.name(raw)));
        turns.push((Callback::Int(callbacks.bound), bound, rows.name(bound)));
    }
    if let Some(go) = go {
        let mut add = |key: &str, unit| rows.add(key, GO, unit, Some(key.to_owned()));
        let cthread = add("go.cthread_ns", "ns");
        let scaling = [
            add("go.scaling_1t_ops", "calls/s"),
            add("go.scaling_2t_ops", "calls/s"),
            add("go.scaling_2t_1t", "×"),
        ];
        let churn = add("go.create_callback_join_us", "µs/thread");
        let first_call = add("go.first_call_ns", "ns");
        turns.push((Callback::Int(go), cthread, rows.name(cthread)));
        let calls = calls_taking(&rows.name(scaling[0]), Callback::Int(go), SCALING_CHUNK_NS);
        jobs.push(Job {
            probe: Probe::Scaling(Callback::Int(go), calls),
            rows: scaling.to_vec(),
        });
        jobs.push(Job {
            probe: Probe::Churn(vec![go]),
            rows: vec![churn],
        });
        jobs.push(Job {
            probe: Probe::FirstCalls(vec![go], Cpus::Any, None),
            rows: vec![first_call],
        });
    }

    let (callbacks, turn_rows): (Vec<_>, Vec<_>) = turns
        .into_iter()
        .map(|(callback, row, name)| ((callback, calls_taking(&name, callback, BLOCK_NS)), row))
        .unzip();
    jobs.insert(
        0,
        Job {
            probe: Probe::Interleaved(callbacks, pairs, Cell::new(f64::INFINITY)),
            rows: [slow_blocks]
                .into_iter()
                .chain(turn_rows)
                .chain(phase_rows)
                .collect(),
        },
    );
    Plan {
        rows,
        jobs,
        differences,
    }
}
