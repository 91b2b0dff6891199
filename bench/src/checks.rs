//! The derived figures of a run against their targets, and the warning
//! for a `#[local]` row that measured something else.

use crate::plan::{self, Placement};
use crate::report::{Check, NO_PLACE, Row, Target};

/// The target for the boundary's own cost, bound − raw, in nanoseconds, at
/// every placement of the trampoline; the report marks each figure over it
/// as missed.
const BOUND_MINUS_RAW_TARGET_NS: f64 = 0.2;

/// The target for one `#[local]` parameter, local − bound, in nanoseconds.
const LOCAL_MINUS_BOUND_TARGET_NS: f64 = 0.5;

/// The target for attaching and releasing per call, in nanoseconds:
/// per_call − bound, checked as per_call minus a raw call taking turns
/// with it on the same unbound thread (at least as large, since a bound
/// call costs more than a raw one, and immune to the machine's phases).
const PER_CALL_MINUS_BOUND_TARGET_NS: f64 = 5.0;

/// The targets for a closure's call over a `#[user_data]` callback's (the
/// same call with the state behind C's pointer, and nothing to keep it
/// alive): `Closure::new`, whose calls take turns, and
/// `Closure::concurrent`.
const CLOSURE_MINUS_USER_DATA_TARGET_NS: f64 = 2.0;
const CONCURRENT_MINUS_USER_DATA_TARGET_NS: f64 = 0.5;

/// The target for a thread's first call, with a free context available.
const FIRST_CALL_TARGET_NS: f64 = 100.0;

/// The target for bound calls on 2 threads against 1.
const SCALING_TARGET: f64 = 1.9;

/// The target for creating a thread that makes one callback, exits and is
/// joined, against the same with a plain call.
const CHURN_TARGET: f64 = 1.1;

/// How far over the bound call a `#[local]` callback may measure in every
/// round before the report says the row measured something else: it
/// usually measures under 1 ns over it, in either phase of the machine.
const LOCAL_CONFLICT_NS: f64 = 5.0;

/// A warning for each place whose `#[local]` callback measured more than
/// [`LOCAL_CONFLICT_NS`] over the bound one in every round. On AMD cores
/// that has been a conflict that lasts the whole process: the value's cache
/// line and a line of the calling thread's stack in one set of the L1 data
/// cache with the same way-predictor tag (see the guide's Performance method).
pub fn local_conflict_warnings(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|row| {
            row.key == "cthread.local_minus_bound_ns" && row.summary.min > LOCAL_CONFLICT_NS
        })
        .map(|row| {
            format!(
                "warning: the `#[local]` callback ({}) measured {:.1} ns over the bound one (at \
                 least {:.1} ns in every round), where it usually measures under 1 ns: on AMD \
                 cores that has been two of the call's cache lines evicting each other in the L1 \
                 data cache's way predictor for the whole process (see the guide's Performance method); rerun",
                row.place, row.summary.median, row.summary.min
            )
        })
        .collect()
}

/// The derived figures and their targets.
pub fn checks(
    rows: &[Row],
    places: &[&str],
    placements: &[Placement],
    go: bool,
    dynamic_tls: bool,
) -> Vec<Check> {
    let found = |key: &str, place: &str| {
        rows.iter()
            .find(|row| row.key == key && row.place == place)
            .map(|row| row.summary.median)
    };
    let median = |key: &str, place: &str| {
        found(key, place).unwrap_or_else(|| panic!("no row {key} for {place}"))
    };
    // A figure shown without a target, for the places whose run has it: a
    // row can have no sample (no thread of the run ran off its creator's
    // CPU, a library was not there).
    let reference = |what: &'static str, unit, places: &[&str]| Check {
        what,
        values: places
            .iter()
            .filter_map(|&place| found(what, place).map(|value| (place.to_owned(), value)))
            .collect(),
        unit,
        target: None,
    };
    let figure = |what, unit, target, compute: &dyn Fn(&str) -> f64| Check {
        what,
        values: places
            .iter()
            .map(|&place| (place.to_owned(), compute(place)))
            .collect(),
        unit,
        target,
    };
    let mut checks = vec![
        figure(
            "cthread.bound_ns − cthread.raw_ns",
            " ns",
            Some(Target::AtMost(BOUND_MINUS_RAW_TARGET_NS)),
            &|p| median("cthread.bound_ns", p) - median("cthread.raw_ns", p),
        ),
        figure(
            "cthread.bound_minus_raw_ns (same thread, per round)",
            " ns",
            Some(Target::AtMost(BOUND_MINUS_RAW_TARGET_NS)),
            &|p| median("cthread.bound_minus_raw_ns", p),
        ),
        figure(
            "cthread.closure_ns − cthread.user_data_ns",
            " ns",
            Some(Target::AtMost(CLOSURE_MINUS_USER_DATA_TARGET_NS)),
            &|p| median("cthread.closure_ns", p) - median("cthread.user_data_ns", p),
        ),
        figure(
            "cthread.closure_concurrent_ns − cthread.user_data_ns",
            " ns",
            Some(Target::AtMost(CONCURRENT_MINUS_USER_DATA_TARGET_NS)),
            &|p| median("cthread.closure_concurrent_ns", p) - median("cthread.user_data_ns", p),
        ),
        figure(
            "cthread.user_data_ns − cthread.bound_ns",
            " ns",
            None,
            &|p| median("cthread.user_data_ns", p) - median("cthread.bound_ns", p),
        ),
        figure("cthread.per_call_ns / cthread.bound_ns", "", None, &|p| {
            median("cthread.per_call_ns", p) / median("cthread.bound_ns", p)
        }),
        figure(
            "cthread.per_call_ns − cthread.bound_ns",
            " ns",
            None,
            &|p| median("cthread.per_call_ns", p) - median("cthread.bound_ns", p),
        ),
        figure(
            "cthread.per_call_minus_raw_ns (same thread, per round)",
            " ns",
            Some(Target::AtMost(PER_CALL_MINUS_BOUND_TARGET_NS)),
            &|p| median("cthread.per_call_minus_raw_ns", p),
        ),
        figure(
            "cthread.local_ns − cthread.bound_ns",
            " ns",
            Some(Target::AtMost(LOCAL_MINUS_BOUND_TARGET_NS)),
            &|p| median("cthread.local_ns", p) - median("cthread.bound_ns", p),
        ),
        figure(
            "cthread.local_minus_bound_ns (same thread, per round)",
            " ns",
            Some(Target::AtMost(LOCAL_MINUS_BOUND_TARGET_NS)),
            &|p| median("cthread.local_minus_bound_ns", p),
        ),
        figure(
            "cthread.cstr_ns − cthread.raw_cstr_ns",
            " ns",
            None,
            &|p| median("cthread.cstr_ns", p) - median("cthread.raw_cstr_ns", p),
        ),
        figure("cthread.sum_ns − cthread.raw_sum_ns", " ns", None, &|p| {
            median("cthread.sum_ns", p) - median("cthread.raw_sum_ns", p)
        }),
        figure(
            "scaling.bound_2t_1t (same blocks, per round)",
            "",
            Some(Target::AtLeast(SCALING_TARGET)),
            &|p| median("scaling.bound_2t_1t", p),
        ),
        figure(
            "scaling.raw_2t_1t (same blocks, per round)",
            "",
            None,
            &|p| median("scaling.raw_2t_1t", p),
        ),
        figure(
            "scaling.closure_concurrent_2t_1t (same blocks, per round)",
            "",
            None,
            &|p| median("scaling.closure_concurrent_2t_1t", p),
        ),
        figure(
            "churn.create_callback_join_us / churn.create_join_us",
            "",
            Some(Target::AtMost(CHURN_TARGET)),
            &|p| median("churn.create_callback_join_us", p) / median("churn.create_join_us", p),
        ),
        figure(
            "churn.create_callback_join_ratio (same samples, per round)",
            "",
            Some(Target::AtMost(CHURN_TARGET)),
            &|p| median("churn.create_callback_join_ratio", p),
        ),
        figure(
            "first_call_ns",
            " ns",
            Some(Target::AtMost(FIRST_CALL_TARGET_NS)),
            &|p| median("first_call_ns", p),
        ),
    ];
    // The first call's references and placements, shown without a target.
    checks.extend(
        [
            ("first_call.c_bind_ns", " ns"),
            ("first_call.c_tls_ns", " ns"),
            ("first_call.raw_ns", " ns"),
            ("first_call.one_cpu_ns", " ns"),
            ("first_call.c_bind_one_cpu_ns", " ns"),
            ("first_call.other_cpu_ns", " ns"),
            ("first_call.c_bind_other_cpu_ns", " ns"),
            ("first_call.on_creator_cpu_pct", " %"),
            ("first_call.on_creator_cpu_ns", " ns"),
            ("first_call.off_creator_cpu_ns", " ns"),
            ("first_call.c_bind_on_creator_cpu_ns", " ns"),
            ("first_call.c_bind_off_creator_cpu_ns", " ns"),
            ("first_call.minus_c_bind_ns", " ns"),
            ("first_call.one_cpu_minus_c_bind_ns", " ns"),
            ("first_call.other_cpu_minus_c_bind_ns", " ns"),
        ]
        .map(|(key, unit)| reference(key, unit, places))
        .into_iter()
        .filter(|check| !check.values.is_empty()),
    );
    if !placements.is_empty() {
        checks.push(Check {
            what: "placement.at_N.bound_minus_raw_ns",
            values: placements
                .iter()
                .map(|placement| {
                    let key = format!("{}.bound_minus_raw_ns", placement.key());
                    (format!("at {}", placement.pad), median(&key, "cdylib"))
                })
                .collect(),
            unit: " ns",
            target: Some(Target::AtMost(BOUND_MINUS_RAW_TARGET_NS)),
        });
    }
    if dynamic_tls {
        let reported = |what, unit, value| Check {
            what,
            values: vec![("cdylib".to_owned(), value)],
            unit,
            target: None,
        };
        checks.extend([
            reported(
                "cthread.bound_dynamic_tls_ns − cthread.raw_dynamic_tls_ns",
                " ns",
                median("cthread.bound_dynamic_tls_ns", "cdylib")
                    - median("cthread.raw_dynamic_tls_ns", "cdylib"),
            ),
            reported(
                "cthread.local_minus_bound_dynamic_tls_ns (per round)",
                " ns",
                median("cthread.local_minus_bound_dynamic_tls_ns", "cdylib"),
            ),
            reported(
                "cthread.per_call_minus_raw_dynamic_tls_ns (per round)",
                " ns",
                median("cthread.per_call_minus_raw_dynamic_tls_ns", "cdylib"),
            ),
            reported(
                "first_call_dynamic_tls_ns",
                " ns",
                median("first_call_dynamic_tls_ns", "cdylib"),
            ),
        ]);
        // Where the run had the C floor of dynamic TLS.
        for key in [
            "cthread.bound_minus_c_tls_read_dynamic_tls_ns",
            "first_call_minus_c_tls_read_dynamic_tls_ns",
            "first_call_minus_c_bind_dynamic_tls_ns",
        ] {
            let floor = reference(key, " ns", &["cdylib"]);
            if !floor.values.is_empty() {
                checks.push(floor);
            }
        }
    }
    if go {
        let single = |what, unit, target, value| Check {
            what,
            values: vec![(plan::GO.to_owned(), value)],
            unit,
            target,
        };
        checks.extend([
            single(
                "go.cthread_ns / cthread.bound_ns (cdylib)",
                "",
                Some(Target::AtLeast(20.0)),
                median("go.cthread_ns", plan::GO) / median("cthread.bound_ns", "cdylib"),
            ),
            single(
                "go.scaling_2t_1t (per round)",
                "",
                None,
                median("go.scaling_2t_1t", plan::GO),
            ),
            single(
                "go.create_callback_join_us / churn.create_join_us (cdylib)",
                "",
                None,
                median("go.create_callback_join_us", plan::GO)
                    / median("churn.create_join_us", "cdylib"),
            ),
        ]);
    }
    checks.push(Check {
        what: "env.remove_loop_10000_ns / env.clear_10000_ns",
        values: vec![(
            NO_PLACE.to_owned(),
            median("env.remove_loop_10000_ns", NO_PLACE) / median("env.clear_10000_ns", NO_PLACE),
        )],
        unit: "",
        target: None,
    });
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Summary;

    #[test]
    fn a_local_row_far_over_bound_in_every_round_is_reported() {
        let row = |key: &str, place: &str, min: f64| Row {
            key: key.to_owned(),
            place: place.to_owned(),
            unit: "ns",
            summary: Summary {
                min,
                median: min + 1.0,
                max: min + 2.0,
            },
            json: None,
        };
        let rows = [
            row("cthread.local_minus_bound_ns", "cdylib", 0.02),
            row("cthread.local_minus_bound_ns", "binary", 17.5),
            row("cthread.local_minus_bound_ns", "portable_tls", 4.9),
            row("cthread.bound_minus_raw_ns", "cdylib", 30.0),
        ];
        let warnings = local_conflict_warnings(&rows);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("(binary) measured 18.5 ns over the bound one (at least 17.5 ns"),
            "{}",
            warnings[0]
        );
        assert!(local_conflict_warnings(&rows[..1]).is_empty());
    }
}
