//! `--markdown`: one run as the tables of the guide's Performance
//! section, so that they come from one run, whole, and not from figures
//! copied by hand.

use std::fmt::Write;

use crate::plan::{self, Placement};
use crate::report::{NO_PLACE, Row, Summary};

/// The places of the main table's first three columns, in order.
const PLACES: [&str; 3] = ["cdylib", "binary", "portable_tls"];

/// How a line's numbers read.
#[derive(Clone, Copy)]
enum Unit {
    /// Nanoseconds or microseconds, as the line's label says: bare numbers.
    Plain,
    /// A share: `25 % (0–70 %)`.
    Percent,
    /// A ratio: `1.99× (1.70–2.15)`.
    Ratio,
}

/// What one line shows in the three place columns.
#[derive(Clone, Copy)]
enum Cells {
    /// The row's median (min–max) in each place that measured it.
    Summary(&'static str),
    /// The difference of two rows' medians, in bold: a figure the report
    /// checks against a target.
    Difference(&'static str, &'static str),
    /// A row of the machine's, in the first column only.
    Machine(&'static str),
}

/// What one line shows in the Go column.
#[derive(Clone, Copy)]
enum Go {
    /// Nothing to compare: a dash.
    None,
    /// A Go row's median (min–max).
    Summary(&'static str),
    /// A Go row's median minus a `cdylib` row's.
    Difference(&'static str, &'static str),
}

/// One line of the main table.
struct Line {
    label: &'static str,
    unit: Unit,
    cells: Cells,
    go: Go,
}

const fn line(label: &'static str, unit: Unit, cells: Cells, go: Go) -> Line {
    Line {
        label,
        unit,
        cells,
        go,
    }
}

/// The main table's lines, in order.
const LINES: [Line; 46] = [
    line(
        "calibration: a fixed chain of 100 dependent additions in C, ns",
        Unit::Plain,
        Cells::Machine(plan::CALIBRATION),
        Go::None,
    ),
    line(
        "… share of its 100 µs blocks that ran slow, per sample",
        Unit::Percent,
        Cells::Machine(plan::SLOW_BLOCKS),
        Go::None,
    ),
    line(
        "C thread calls a plain C-ABI function (the floor), ns",
        Unit::Plain,
        Cells::Summary("cthread.raw_ns"),
        Go::None,
    ),
    line(
        "… a `#[c_callback]`, thread bound, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_ns"),
        Go::Summary("go.cthread_ns"),
    ),
    line(
        "… the boundary's own cost, bound − floor (medians), ns",
        Unit::Plain,
        Cells::Difference("cthread.bound_ns", "cthread.raw_ns"),
        Go::Difference("go.cthread_ns", "cthread.raw_ns"),
    ),
    line(
        "… bound − floor, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_minus_raw_ns"),
        Go::None,
    ),
    line(
        "… block by block, in cycles where the calibration chain ran fast, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_minus_raw_fast_ns"),
        Go::None,
    ),
    line(
        "… and where it ran slow, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_minus_raw_slow_ns"),
        Go::None,
    ),
    line(
        "… with `attach = per_call`, ns",
        Unit::Plain,
        Cells::Summary("cthread.per_call_ns"),
        Go::None,
    ),
    line(
        "… per_call − a raw call taking turns on its thread, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.per_call_minus_raw_ns"),
        Go::None,
    ),
    line(
        "… with one `#[local]` parameter, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_ns"),
        Go::None,
    ),
    line(
        "… local − bound, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_minus_bound_ns"),
        Go::None,
    ),
    line(
        "… block by block, in cycles where the calibration chain ran fast, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_minus_bound_fast_ns"),
        Go::None,
    ),
    line(
        "… and where it ran slow, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_minus_bound_slow_ns"),
        Go::None,
    ),
    line(
        "… with one `&CStr`, minus a plain fn doing the same `strlen` (medians), ns",
        Unit::Plain,
        Cells::Difference("cthread.cstr_ns", "cthread.raw_cstr_ns"),
        Go::None,
    ),
    line(
        "… with one `&[u8]` of 16 bytes summed, ns",
        Unit::Plain,
        Cells::Summary("cthread.sum_ns"),
        Go::None,
    ),
    line(
        "… a plain fn summing the same 16 bytes, ns",
        Unit::Plain,
        Cells::Summary("cthread.raw_sum_ns"),
        Go::None,
    ),
    line(
        "… a `#[user_data] &Step` callback, ns",
        Unit::Plain,
        Cells::Summary("cthread.user_data_ns"),
        Go::None,
    ),
    line(
        "… a `Closure::new` (`FnMut`, calls take turns), ns",
        Unit::Plain,
        Cells::Summary("cthread.closure_ns"),
        Go::None,
    ),
    line(
        "… a `Closure::concurrent` (`Fn + Sync`), ns",
        Unit::Plain,
        Cells::Summary("cthread.closure_concurrent_ns"),
        Go::None,
    ),
    line(
        "… make a `OnceClosure` and call it once (the call frees it), ns",
        Unit::Plain,
        Cells::Summary("cthread.once_cycle_ns"),
        Go::None,
    ),
    line(
        "… make a `Closure::new`, hand it to C, call it once, free it, ns",
        Unit::Plain,
        Cells::Summary("cthread.closure_cycle_ns"),
        Go::None,
    ),
    line(
        "two threads against one, calls per second in the same blocks, per round: bound",
        Unit::Ratio,
        Cells::Summary("scaling.bound_2t_1t"),
        Go::Summary("go.scaling_2t_1t"),
    ),
    line(
        "… the floor",
        Unit::Ratio,
        Cells::Summary("scaling.raw_2t_1t"),
        Go::None,
    ),
    line(
        "… a `Closure::concurrent` both threads call",
        Unit::Ratio,
        Cells::Summary("scaling.closure_concurrent_2t_1t"),
        Go::None,
    ),
    line(
        "… a `Closure::new` both threads call (their calls take turns)",
        Unit::Ratio,
        Cells::Summary("scaling.closure_2t_1t"),
        Go::None,
    ),
    line(
        "… a `std::sync::Mutex` both threads lock (the floor for calls that take turns)",
        Unit::Ratio,
        Cells::Summary("scaling.mutex_2t_1t"),
        Go::None,
    ),
    line(
        "create a C thread, one plain call, exit, join, µs",
        Unit::Plain,
        Cells::Summary("churn.create_join_us"),
        Go::None,
    ),
    line(
        "the same with one callback, µs",
        Unit::Plain,
        Cells::Summary("churn.create_callback_join_us"),
        Go::Summary("go.create_callback_join_us"),
    ),
    line(
        "… the callback's over the plain call's, in the same samples, per round",
        Unit::Ratio,
        Cells::Summary("churn.create_callback_join_ratio"),
        Go::None,
    ),
    line(
        "first callback on a new thread, ns",
        Unit::Plain,
        Cells::Summary("first_call_ns"),
        Go::Summary("go.first_call_ns"),
    ),
    line(
        "… a plain C-ABI function's first call on a new thread, ns",
        Unit::Plain,
        Cells::Summary("first_call.raw_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C: TLS slot, lock-free pop, `pthread_setspecific`, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_ns"),
        Go::None,
    ),
    line(
        "… the callback's minus the C version's, per round, ns",
        Unit::Plain,
        Cells::Summary("first_call.minus_c_bind_ns"),
        Go::None,
    ),
    line(
        "… one store to a `_Thread_local` variable in C, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_tls_ns"),
        Go::None,
    ),
    line(
        "… share of those threads that ran on the CPU that created them",
        Unit::Percent,
        Cells::Summary("first_call.on_creator_cpu_pct"),
        Go::None,
    ),
    line(
        "… the callback's first call on those threads, ns",
        Unit::Plain,
        Cells::Summary("first_call.on_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "… on the others, ns",
        Unit::Plain,
        Cells::Summary("first_call.off_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C, on the threads that ran on their creator's CPU, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_on_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "… on the others, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_off_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "first callback on a new thread, every thread on one CPU, ns",
        Unit::Plain,
        Cells::Summary("first_call.one_cpu_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C, every thread on one CPU, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_one_cpu_ns"),
        Go::None,
    ),
    line(
        "… the callback's minus the C version's, per round, ns",
        Unit::Plain,
        Cells::Summary("first_call.one_cpu_minus_c_bind_ns"),
        Go::None,
    ),
    line(
        "first callback on a new thread, each thread on another CPU than its creator and \
         the thread before it, ns",
        Unit::Plain,
        Cells::Summary("first_call.other_cpu_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C, the same way, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_other_cpu_ns"),
        Go::None,
    ),
    line(
        "… the callback's minus the C version's, per round, ns",
        Unit::Plain,
        Cells::Summary("first_call.other_cpu_minus_c_bind_ns"),
        Go::None,
    ),
];

/// The dynamic-TLS table's lines: label and row (all `cdylib`, in ns).
const DYNAMIC_LINES: [(&str, &str); 10] = [
    ("raw call, library in static TLS", "cthread.raw_ns"),
    ("bound callback, library in static TLS", "cthread.bound_ns"),
    (
        "raw call, library in dynamic TLS (a later copy)",
        "cthread.raw_dynamic_tls_ns",
    ),
    (
        "bound callback, library in dynamic TLS",
        "cthread.bound_dynamic_tls_ns",
    ),
    (
        "… with one `#[local]` parameter",
        "cthread.local_dynamic_tls_ns",
    ),
    (
        "… local − bound, per round",
        "cthread.local_minus_bound_dynamic_tls_ns",
    ),
    (
        "… with `attach = per_call`",
        "cthread.per_call_dynamic_tls_ns",
    ),
    (
        "… per_call − a raw call taking turns on its thread, per round",
        "cthread.per_call_minus_raw_dynamic_tls_ns",
    ),
    (
        "first callback on a new thread",
        "first_call_dynamic_tls_ns",
    ),
    (
        "… a plain C-ABI function's first call on a new thread",
        "first_call.raw_dynamic_tls_ns",
    ),
];

/// The dynamic-TLS table's lines after [`DYNAMIC_LINES`], where the run
/// measured them: the C read of a thread-local through its descriptor,
/// its library in dynamic TLS too, and the bound callback over it; the
/// same read as a new thread's first, the least a first call does in C
/// with its slot there, and the callback's first call over each.
const DYNAMIC_FLOOR_LINES: [(&str, &str); 6] = [
    (
        "a C function reading a `_Thread_local` through its TLS descriptor, library in dynamic TLS",
        "cthread.c_tls_read_dynamic_tls_ns",
    ),
    (
        "… bound callback in dynamic TLS minus it, per round",
        "cthread.bound_minus_c_tls_read_dynamic_tls_ns",
    ),
    (
        "… the same read as a new thread's first (glibc allocates the thread's block)",
        "first_call.c_tls_read_dynamic_tls_ns",
    ),
    (
        "… first callback on a new thread in dynamic TLS minus it, per round",
        "first_call_minus_c_tls_read_dynamic_tls_ns",
    ),
    (
        "the least a first call does, in C (TLS slot, lock-free pop, `pthread_setspecific`), its slot in that library",
        "first_call.c_bind_dynamic_tls_ns",
    ),
    (
        "… first callback on a new thread in dynamic TLS minus it, per round",
        "first_call_minus_c_bind_dynamic_tls_ns",
    ),
];

/// The sizes of the environment table, as in `env.*` keys.
const ENV_SIZES: [usize; 3] = [100, 1_000, 10_000];

/// A number with three significant digits, whole from 100 on.
pub fn figure(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// A summary as one cell: median (min–max), with the unit's sign.
fn summary_cell(summary: Summary, unit: Unit) -> String {
    let (median, min, max) = (
        figure(summary.median),
        figure(summary.min),
        figure(summary.max),
    );
    match unit {
        Unit::Plain => format!("{median} ({min}–{max})"),
        Unit::Percent => format!(
            "{:.0} % ({:.0}–{:.0} %)",
            summary.median, summary.min, summary.max
        ),
        Unit::Ratio => format!("{median}× ({min}–{max})"),
    }
}

/// A duration in nanoseconds with the unit that suits it.
fn duration(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{} ms", figure(ns / 1e6))
    } else if ns >= 1e3 {
        format!("{} µs", figure(ns / 1e3))
    } else {
        format!("{} ns", figure(ns))
    }
}

/// A count with a space between thousands: `10 000`.
fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(digit);
    }
    out
}

/// The run as Markdown: a line on how it was made, then the main table,
/// the placements', the environment's and the dynamic-TLS one (each only
/// where the run measured its rows).
pub fn tables(rows: &[Row], placements: &[Placement], about: &str) -> String {
    let find = |key: &str, place: &str| {
        rows.iter()
            .find(|row| row.key == key && row.place == place)
            .map(|row| row.summary)
    };
    let mut out = String::new();
    let _ = writeln!(out, "{about}\n");
    let _ = writeln!(
        out,
        "| what | cdylib (dlopen) | linked | `portable_tls` cdylib | Go (cgo) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for line in &LINES {
        let mut cells: Vec<String> = match line.cells {
            Cells::Machine(key) => {
                let first =
                    find(key, NO_PLACE).map_or_else(String::new, |s| summary_cell(s, line.unit));
                vec![first, String::new(), String::new()]
            }
            Cells::Summary(key) => PLACES
                .iter()
                .map(|place| {
                    find(key, place).map_or_else(|| "—".to_owned(), |s| summary_cell(s, line.unit))
                })
                .collect(),
            Cells::Difference(a, b) => PLACES
                .iter()
                .map(|place| match (find(a, place), find(b, place)) {
                    (Some(a), Some(b)) => format!("**{}**", figure(a.median - b.median)),
                    _ => "—".to_owned(),
                })
                .collect(),
        };
        cells.push(match line.go {
            Go::None => "—".to_owned(),
            Go::Summary(key) => find(key, plan::GO)
                .map_or_else(|| "not measured".to_owned(), |s| summary_cell(s, line.unit)),
            Go::Difference(go, cdylib) => match (find(go, plan::GO), find(cdylib, PLACES[0])) {
                (Some(go), Some(cdylib)) => figure(go.median - cdylib.median),
                _ => "not measured".to_owned(),
            },
        });
        let _ = writeln!(out, "| {} | {} |", line.label, cells.join(" | "));
    }
    if !placements.is_empty() {
        let _ = writeln!(
            out,
            "\n| `bench_bound` code shifted by | lands at byte | floor, ns | bound, ns | \
             bound − floor, per round, ns |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for placement in placements {
            let key = placement.key();
            let get = |what: &str| find(&format!("{key}.{what}"), PLACES[0]);
            let (Some(raw), Some(bound), Some(difference)) =
                (get("raw_ns"), get("bound_ns"), get("bound_minus_raw_ns"))
            else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | **{}** ({}–{}) |",
                placement.pad,
                placement.offset,
                summary_cell(raw, Unit::Plain),
                summary_cell(bound, Unit::Plain),
                figure(difference.median),
                figure(difference.min),
                figure(difference.max),
            );
        }
    }
    let environment: Vec<String> = ENV_SIZES
        .iter()
        .filter_map(|size| {
            let clear = find(&format!("env.clear_{size}_ns"), NO_PLACE)?;
            let remove = find(&format!("env.remove_loop_{size}_ns"), NO_PLACE)?;
            let cell = |s: Summary| {
                format!(
                    "{} ({}–{})",
                    duration(s.median),
                    duration(s.min),
                    duration(s.max)
                )
            };
            Some(format!(
                "| {} variables | {} | {} |",
                count(*size),
                cell(clear),
                cell(remove)
            ))
        })
        .collect();
    if !environment.is_empty() {
        let _ = writeln!(
            out,
            "\n| environment | `callgate::env::clear` | `remove_var` loop |\n|---|---|---|"
        );
        for line in environment {
            let _ = writeln!(out, "{line}");
        }
    }
    let line = |label: &str, key: &str| {
        find(key, PLACES[0]).map(|s| {
            format!(
                "| {label} | {} ns | {} ns | {} ns |",
                figure(s.min),
                figure(s.median),
                figure(s.max)
            )
        })
    };
    let dynamic: Vec<String> = DYNAMIC_LINES
        .iter()
        .map(|(label, key)| line(label, key))
        .collect::<Option<_>>()
        .unwrap_or_default();
    if !dynamic.is_empty() {
        let _ = writeln!(out, "\n| what | min | median | max |\n|---|---|---|---|");
        for line in dynamic {
            let _ = writeln!(out, "{line}");
        }
        // The C floor's lines, where the run had the C library.
        for line in DYNAMIC_FLOOR_LINES
            .iter()
            .filter_map(|(label, key)| line(label, key))
        {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

/// What the guide says about the machine: the CPU's model name, family
/// and model from `/proc/cpuinfo`, where there is one.
pub fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(key, _)| key.trim() == name)
            .map(|(_, value)| value.trim().to_owned())
    };
    match (field("model name"), field("cpu family"), field("model")) {
        (Some(name), Some(family), Some(model)) => {
            format!("`{name}` (family {family}, model {model})")
        }
        (Some(name), _, _) => format!("`{name}`"),
        _ => "an unknown CPU".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str, place: &str, min: f64, median: f64, max: f64) -> Row {
        Row {
            key: key.to_owned(),
            place: place.to_owned(),
            unit: "ns",
            summary: Summary { min, median, max },
            json: None,
        }
    }

    #[test]
    fn figures_keep_three_significant_digits() {
        assert_eq!(figure(2.034), "2.03");
        assert_eq!(figure(35.64), "35.6");
        assert_eq!(figure(199.4), "199");
        assert_eq!(figure(3515.2), "3515");
        assert_eq!(figure(-0.126), "-0.13");
        assert_eq!(figure(0.0), "0.00");
    }

    #[test]
    fn durations_take_the_unit_that_suits_them() {
        assert_eq!(duration(61.0), "61.0 ns");
        assert_eq!(duration(21_800.0), "21.8 µs");
        assert_eq!(duration(1_970_000.0), "1.97 ms");
        assert_eq!(count(100), "100");
        assert_eq!(count(1_000), "1 000");
        assert_eq!(count(10_000), "10 000");
    }

    #[test]
    fn a_line_shows_each_place_and_marks_what_was_not_measured() {
        let rows = [
            row("cthread.raw_ns", "cdylib", 2.0, 2.03, 2.26),
            row("cthread.raw_ns", "binary", 1.34, 1.35, 1.56),
            row("cthread.bound_ns", "cdylib", 2.01, 2.5, 2.83),
            row("cthread.bound_ns", "binary", 1.85, 1.98, 2.9),
            row("go.cthread_ns", plan::GO, 44.8, 47.2, 78.2),
            row(plan::CALIBRATION, NO_PLACE, 35.5, 35.6, 51.3),
            row(plan::SLOW_BLOCKS, NO_PLACE, 0.0, 25.0, 70.0),
        ];
        let out = tables(&rows, &[], "about the run");
        assert!(out.starts_with("about the run\n"), "{out}");
        let line = |label: &str| {
            out.lines()
                .find(|line| line.starts_with(&format!("| {label}")))
                .unwrap_or_else(|| panic!("no line {label} in {out}"))
                .to_owned()
        };
        assert_eq!(
            line("C thread calls a plain C-ABI function"),
            "| C thread calls a plain C-ABI function (the floor), ns | 2.03 (2.00–2.26) | \
             1.35 (1.34–1.56) | — | — |"
        );
        assert_eq!(
            line("… a `#[c_callback]`, thread bound"),
            "| … a `#[c_callback]`, thread bound, ns | 2.50 (2.01–2.83) | 1.98 (1.85–2.90) | — | \
             47.2 (44.8–78.2) |"
        );
        assert_eq!(
            line("… the boundary's own cost"),
            "| … the boundary's own cost, bound − floor (medians), ns | **0.47** | **0.63** | — | \
             45.2 |"
        );
        assert_eq!(
            line("calibration"),
            "| calibration: a fixed chain of 100 dependent additions in C, ns | \
             35.6 (35.5–51.3) |  |  | — |"
        );
        assert_eq!(
            line("… share of its 100 µs blocks"),
            "| … share of its 100 µs blocks that ran slow, per sample | 25 % (0–70 %) |  |  | — |"
        );
        assert!(line("first callback on a new thread").ends_with("| — | — | — | not measured |"));
        // Tables without rows are left out.
        assert!(!out.contains("environment"), "{out}");
        assert!(!out.contains("| what | min |"), "{out}");
    }

    #[test]
    fn the_environment_and_dynamic_tables_appear_with_their_rows() {
        let mut rows = vec![
            row("env.clear_100_ns", NO_PLACE, 59.0, 61.0, 189.0),
            row(
                "env.remove_loop_100_ns",
                NO_PLACE,
                21_500.0,
                21_800.0,
                48_700.0,
            ),
        ];
        let out = tables(&rows, &[], "");
        assert!(
            out.contains(
                "| 100 variables | 61.0 ns (59.0 ns–189 ns) | 21.8 µs (21.5 µs–48.7 µs) |"
            ),
            "{out}"
        );
        assert!(!out.contains("| what | min |"), "{out}");
        rows.extend(
            DYNAMIC_LINES
                .iter()
                .map(|(_, key)| row(key, "cdylib", 1.0, 2.0, 3.0)),
        );
        let out = tables(&rows, &[], "");
        assert!(
            out.contains("| first callback on a new thread | 1.00 ns | 2.00 ns | 3.00 ns |"),
            "{out}"
        );
        // The C floor's lines only where the run measured them.
        assert!(!out.contains("minus it"), "{out}");
        rows.push(row(
            "cthread.bound_minus_c_tls_read_dynamic_tls_ns",
            "cdylib",
            1.0,
            1.5,
            2.0,
        ));
        let out = tables(&rows, &[], "");
        assert!(
            out.contains("| … bound callback in dynamic TLS minus it, per round | 1.00 ns | 1.50 ns | 2.00 ns |"),
            "{out}"
        );
    }
}
