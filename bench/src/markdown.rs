//! `--markdown`: one run as the tables of the guide's Performance
//! section, so that they come from one run, whole, and not from figures
//! copied by hand. The tables' lines are laid out in [`layout`].

mod layout;

use std::fmt::Write;

use crate::plan::{self, Placement};
use crate::report::{NO_PLACE, Row, Summary};
use layout::{Cells, DYNAMIC_FLOOR_LINES, DYNAMIC_LINES, ENV_SIZES, Go, LINES, PLACES, Unit};

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
