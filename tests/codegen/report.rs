//! The guard's report: a table of what each trampoline's straight line
//! holds, then every rule broken, at which instruction, and what to do.

use std::fmt;
use std::path::PathBuf;

use crate::rules::Rule;
use crate::target::{Target, Trampoline};

/// A rule a trampoline (or `bind_first`) broke, and where.
pub struct Violation {
    pub subject: String,
    pub rule: Rule,
    pub detail: String,
}

/// What a trampoline's straight line holds.
pub struct Row {
    pub bounds: &'static Trampoline,
    pub line: Vec<String>,
    pub instructions: usize,
    pub frame_bytes: u64,
    pub calls: usize,
    pub thread_pointer: usize,
    pub lines: usize,
    pub locked: usize,
    pub context: Option<(i64, i64)>,
    pub aligned: bool,
    pub cold_calls: usize,
}

pub struct Report {
    pub target: &'static Target,
    pub library: PathBuf,
    pub rows: Vec<Row>,
    pub bind_first: Option<String>,
    pub violations: Vec<Violation>,
}

impl Report {
    /// Whether `subject` broke `rule`.
    pub fn broke(&self, subject: &str, rule: Rule) -> bool {
        self.violations
            .iter()
            .any(|violation| violation.subject == subject && violation.rule == rule)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.target;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let library = self.library.strip_prefix(root).unwrap_or(&self.library);
        writeln!(f, "codegen guard, {}: {}", target.triple, library.display())?;
        let mut table = vec![[
            "trampoline".to_owned(),
            "instructions".to_owned(),
            "frame bytes".to_owned(),
            "calls".to_owned(),
            format!("{} accesses", target.thread_pointer.0),
            format!("{}-byte lines", target.fetch_line),
            "locked".to_owned(),
            "context bytes".to_owned(),
            "aligned".to_owned(),
            "cold call sites".to_owned(),
        ]];
        for row in &self.rows {
            table.push([
                row.bounds.name(),
                format!("{} / {}", row.instructions, row.bounds.instructions),
                format!("{} / {}", row.frame_bytes, row.bounds.frame_bytes),
                row.calls.to_string(),
                row.thread_pointer.to_string(),
                format!("{} / {}", row.lines, row.bounds.lines),
                format!("{} / {}", row.locked, row.bounds.locked),
                row.context
                    .map_or("-".to_owned(), |(start, end)| format!("{start}..{end}")),
                if row.aligned { "yes" } else { "NO" }.to_owned(),
                row.cold_calls.to_string(),
            ]);
        }
        let widths: Vec<usize> = (0..table[0].len())
            .map(|column| table.iter().map(|row| row[column].len()).max().unwrap_or(0))
            .collect();
        for row in &table {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:width$}"))
                .collect();
            writeln!(f, "  {}", cells.join("  ").trim_end())?;
        }
        if let Some(found) = &self.bind_first {
            writeln!(f, "  bind_first: {found}")?;
        }
        if self.violations.is_empty() {
            return writeln!(f, "every rule kept");
        }
        let mut rules: Vec<Rule> = Vec::new();
        for violation in &self.violations {
            if !rules.contains(&violation.rule) {
                rules.push(violation.rule);
            }
        }
        for rule in rules {
            writeln!(f, "BROKEN: {}", rule.what())?;
            for violation in self.violations.iter().filter(|v| v.rule == rule) {
                writeln!(f, "  {}: {}", violation.subject, violation.detail)?;
            }
            writeln!(f, "  what to do: {}", rule.fix())?;
        }
        for row in &self.rows {
            if self
                .violations
                .iter()
                .any(|v| v.subject == row.bounds.name())
            {
                writeln!(f, "the straight line of {}:", row.bounds.name())?;
                for instruction in &row.line {
                    writeln!(f, "    {instruction}")?;
                }
            }
        }
        Ok(())
    }
}
