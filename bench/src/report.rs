//! Summaries of the samples and the two outputs: a table for people, one
//! JSON object for tools.

use std::fmt::Write;

/// The smallest, median and largest of a measurement's samples.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    /// The smallest sample.
    pub min: f64,
    /// The median sample (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The largest sample.
    pub max: f64,
}

impl Summary {
    /// Summarises `samples`; panics if there are none.
    pub fn of(samples: &[f64]) -> Summary {
        assert!(!samples.is_empty(), "no samples");
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let middle = sorted.len() / 2;
        let median = if sorted.len() % 2 == 1 {
            sorted[middle]
        } else {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        };
        Summary {
            min: sorted[0],
            median,
            max: sorted[sorted.len() - 1],
        }
    }
}

/// The place of rows that involve no callback (the `env.*` ones).
pub const NO_PLACE: &str = "-";

/// One line of the report.
pub struct Row {
    /// The measurement's name.
    pub key: String,
    /// Where the callbacks live (`cdylib`, `binary`, `portable_tls`), or
    /// [`NO_PLACE`].
    pub place: String,
    /// The unit of the numbers.
    pub unit: &'static str,
    /// The numbers.
    pub summary: Summary,
    /// The key of the row's median in the `--json` object, if it is there.
    pub json: Option<String>,
}

/// A derived figure and the target it is held against.
pub struct Check {
    /// What is computed, from which rows.
    pub what: &'static str,
    /// The figure per place (or placement), in the table's order.
    pub values: Vec<(String, f64)>,
    /// The unit of the figure (empty for a ratio).
    pub unit: &'static str,
    /// The target, or `None` if the figure is only reported.
    pub target: Option<Target>,
}

/// A bound the figure must stay within.
#[derive(Clone, Copy)]
pub enum Target {
    /// At most this.
    AtMost(f64),
    /// At least this.
    AtLeast(f64),
}

impl Target {
    fn met(self, value: f64) -> bool {
        match self {
            Target::AtMost(bound) => value <= bound,
            Target::AtLeast(bound) => value >= bound,
        }
    }

    fn describe(self) -> String {
        match self {
            Target::AtMost(bound) => format!("≤ {bound}"),
            Target::AtLeast(bound) => format!("≥ {bound}"),
        }
    }
}

/// Formats a number with about four significant digits.
pub fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1000.0 || value == 0.0 {
        format!("{value:.0}")
    } else if magnitude >= 100.0 {
        format!("{value:.1}")
    } else if magnitude >= 10.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// The human-readable report.
pub fn table(header: &str, rows: &[Row], checks: &[Check]) -> String {
    let mut out = String::new();
    let name_width = rows.iter().map(|row| row.key.len()).max().unwrap_or(0) + 4;
    let place_width = rows.iter().map(|row| row.place.len()).max().unwrap_or(0) + 2;
    let _ = writeln!(out, "{header}\n");
    let _ = writeln!(
        out,
        "{:name_width$}{:<place_width$}{:>14}{:>14}{:>14}  unit",
        "  measurement", "callbacks", "min", "median", "max"
    );
    for row in rows {
        let marker = if row.json.is_some() { ' ' } else { '+' };
        let _ = writeln!(
            out,
            "{:name_width$}{:<place_width$}{:>14}{:>14}{:>14}  {}",
            format!("{marker} {}", row.key),
            row.place,
            number(row.summary.min),
            number(row.summary.median),
            number(row.summary.max),
            row.unit,
        );
    }
    let _ = writeln!(
        out,
        "\n+ not in --json (which reports the medians of the other rows)\n"
    );
    let what_width = checks
        .iter()
        .map(|check| check.what.len())
        .max()
        .unwrap_or(0)
        + 2;
    let values: Vec<String> = checks
        .iter()
        .map(|check| {
            let values: Vec<String> = check
                .values
                .iter()
                .map(|(place, value)| {
                    let place = if place == NO_PLACE { "" } else { place };
                    format!("{}{} {place}", number(*value), check.unit)
                })
                .collect();
            values.join(", ").trim_end().to_owned()
        })
        .collect();
    let value_width = values.iter().map(|v| v.chars().count()).max().unwrap_or(0) + 2;
    let _ = writeln!(
        out,
        "{:what_width$}{:value_width$}target",
        "from the medians", "value"
    );
    for (check, values) in checks.iter().zip(&values) {
        let target = match check.target {
            None => "(reported)".to_owned(),
            Some(target) => {
                let verdicts: Vec<&str> = check
                    .values
                    .iter()
                    .map(|(_, value)| if target.met(*value) { "met" } else { "MISSED" })
                    .collect();
                format!(
                    "{}{}: {}",
                    target.describe(),
                    check.unit,
                    verdicts.join(", ")
                )
            }
        };
        let _ = writeln!(
            out,
            "{:what_width$}{values:value_width$}{target}",
            check.what
        );
    }
    out
}

/// One JSON object: each row's `json` key and median, then the `extra`
/// figures, each to three decimals, in order.
pub fn json(rows: &[Row], extra: &[(String, f64)]) -> String {
    let fields: Vec<String> = rows
        .iter()
        .filter_map(|row| Some((row.json.as_deref()?, row.summary.median)))
        .chain(extra.iter().map(|(key, value)| (key.as_str(), *value)))
        .map(|(key, value)| {
            assert!(value.is_finite(), "{key} is not finite");
            let value = (value * 1000.0).round() / 1000.0;
            format!("  \"{key}\": {value}")
        })
        .collect();
    format!("{{\n{}\n}}", fields.join(",\n"))
}
