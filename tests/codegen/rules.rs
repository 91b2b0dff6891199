//! The rules, checked on a library's listing, and the report: a table of
//! what each trampoline's straight line holds, then every rule broken,
//! at which instruction, and what to do.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::disassembly::{Function, Instruction, Kind, Listing};
use crate::target::{self, Bytes, Target, Trampoline};

/// The rules (see the module docs of `main.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rule {
    /// The trampoline is in the library.
    Present,
    /// Its straight line can be followed to a return.
    StraightLine,
    Instructions,
    Frame,
    Call,
    ThreadPointer,
    Lines,
    ContextLine,
    ReadModifyWrite,
    Aligned,
    ColdCallOnce,
    BindFirst,
}

impl Rule {
    fn what(self) -> &'static str {
        match self {
            Rule::Present => "the trampoline is in the library",
            Rule::StraightLine => "the straight line reaches a return",
            Rule::Instructions => "at most the table's instructions on the straight line",
            Rule::Frame => "no frame on the straight line (beyond the table's)",
            Rule::Call => "no call on the straight line",
            Rule::ThreadPointer => {
                "one access relative to the thread pointer (on aarch64, one read of it): the \
                 slot's load"
            }
            Rule::Lines => "the straight line within the table's 64-byte lines",
            Rule::ContextLine => "the straight line touches the context's first line only",
            Rule::ReadModifyWrite => {
                "no read-modify-write of the context, no locked instruction, on the straight line"
            }
            Rule::Aligned => "the trampoline starts on a fetch-line boundary",
            Rule::ColdCallOnce => "the cold function is called from one place",
            Rule::BindFirst => "one bind_first, aligned and within one page",
        }
    }

    fn fix(self) -> &'static str {
        match self {
            Rule::Present => "was the fixture's callback renamed? The table names its symbol.",
            Rule::StraightLine => {
                "read the trampoline's code: the guard found no return before the function's end, \
                 or a loop."
            }
            Rule::Instructions => {
                "the fast path grew: compare its straight line (below) with the last good build's. \
                 Keep new work off the fast path; if the growth is meant, raise the bound in the \
                 table (tests/codegen/main.rs) and say why."
            }
            Rule::Frame => {
                "something on the straight line now needs the stack (a value kept across a call, \
                 or a slow path's frame set up at the entry): keep what needs a frame behind the \
                 one call to the cold function (`call_cold` in boundary/slow.rs)."
            }
            Rule::Call => {
                "a function of the call path is no longer inlined, or the slot is read through a \
                 call (a TLS descriptor, `__tls_get_addr`): keep the call path inline and every \
                 other case behind the cold function, and build without \
                 `--cfg callgate_portable_tls`."
            }
            Rule::ThreadPointer => {
                "the fast path reads the slot with one load at its static offset (`static_at` in \
                 tls/x86_64_linux_gnu/static_offset.rs, tls/aarch64_linux_gnu/static_offset.rs) and touches \
                 no other thread-local."
            }
            Rule::Lines => {
                "the straight line outgrew its instruction-fetch line: shorten it, or check that \
                 `align_to_fetch_line` (boundary/straight.rs) still aligns the trampoline."
            }
            Rule::ContextLine => {
                "keep the fields a bound call touches first in `Context`, in its first cache line \
                 (context.rs)."
            }
            Rule::ReadModifyWrite => {
                "the fast path counts nothing and takes no lock: a count that every call \
                 increments makes each call wait for the last one's (`outer_token` in \
                 context.rs). Keep counters and atomics on the slow paths."
            }
            Rule::Aligned => {
                "`align_to_fetch_line` (boundary/straight.rs) no longer starts the trampoline on a fetch-line \
                 boundary."
            }
            Rule::ColdCallOnce => {
                "every call the fast path does not serve goes through one call of the cold \
                 function, so that the compiler sets the frame up on that path only (`call_cold` \
                 in boundary/slow.rs)."
            }
            Rule::BindFirst => {
                "`bind_first` (boundary/slow.rs) is not generic, so one copy serves every callback, and \
                 `align_function::<10>` aligns it so that its code stays in one page: a thread's \
                 first call would otherwise fetch two."
            }
        }
    }
}

/// A rule a trampoline (or `bind_first`) broke, and where.
pub struct Violation {
    pub subject: String,
    pub rule: Rule,
    pub detail: String,
}

/// What a trampoline's straight line holds.
struct Row {
    bounds: &'static Trampoline,
    line: Vec<String>,
    instructions: usize,
    frame_bytes: u64,
    calls: usize,
    thread_pointer: usize,
    lines: usize,
    context: Option<(i64, i64)>,
    aligned: bool,
    cold_calls: usize,
}

pub struct Report {
    target: &'static Target,
    library: PathBuf,
    rows: Vec<Row>,
    bind_first: Option<String>,
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

/// Checks every rule on `listing`, read from `library`.
pub fn check(target: &'static Target, library: &Path, listing: &Listing) -> Report {
    let mut report = Report {
        target,
        library: library.to_owned(),
        rows: Vec::new(),
        bind_first: None,
        violations: Vec::new(),
    };
    for bounds in target.trampolines {
        let mut broke = |rule, detail: String| {
            report.violations.push(Violation {
                subject: bounds.symbol.to_owned(),
                rule,
                detail,
            });
        };
        let Some(function) = listing.function(bounds.symbol) else {
            broke(Rule::Present, "no such symbol".to_owned());
            continue;
        };
        let line = match straight_line(listing, function) {
            Ok(line) => line,
            Err(why) => {
                broke(Rule::StraightLine, why);
                continue;
            }
        };
        let row = measure(target, bounds, listing, function, &line, &mut broke);
        report.rows.push(row);
    }
    if let Some(alignment) = target.bind_first_alignment {
        match bind_first(target, listing, alignment) {
            Ok(found) => report.bind_first = Some(found),
            Err(detail) => report.violations.push(Violation {
                subject: "bind_first".to_owned(),
                rule: Rule::BindFirst,
                detail,
            }),
        }
    }
    report
}

/// Where `bind_first` is, if there is one copy of it, aligned to
/// `alignment` and within one page; else what is wrong.
fn bind_first(target: &Target, listing: &Listing, alignment: u64) -> Result<String, String> {
    const NAME: &str = "callgate::boundary::slow::bind_first";
    let function = listing
        .function(NAME)
        .ok_or_else(|| format!("no function {NAME}"))?;
    let copies: BTreeSet<u64> = listing
        .functions
        .iter()
        .filter(|function| function.name == NAME)
        .map(|function| function.address)
        .collect();
    let last = function.address + function.size.max(1) - 1;
    let found = format!("at {:#x}, {} bytes", function.address, function.size);
    let wanted = format!(
        "on a {alignment}-byte boundary, within one {}-byte page",
        target.page
    );
    if copies.len() != 1
        || !function.address.is_multiple_of(alignment)
        || function.address / target.page != last / target.page
    {
        return Err(format!(
            "{} copies, one {found}; one wanted, {wanted}",
            copies.len()
        ));
    }
    Ok(format!("{found}, {wanted}"))
}

/// From the entry through every conditional branch not taken and every
/// jump within the function, up to and including the first return (or a
/// jump out of the function, a tail call).
fn straight_line<'a>(
    listing: &'a Listing,
    function: &Function,
) -> Result<Vec<&'a Instruction>, String> {
    let mut line = Vec::new();
    let mut seen = BTreeSet::new();
    let mut at = function.address;
    loop {
        let instruction = listing
            .at(at)
            .filter(|_| function.contains(at))
            .ok_or_else(|| format!("no return before {at:#x}, past the function's end"))?;
        if !seen.insert(at) {
            return Err(format!("it loops back to {at:#x}"));
        }
        line.push(instruction);
        match (instruction.kind, instruction.destination) {
            (Kind::Ret, _) => return Ok(line),
            (Kind::Jump, Some(to)) if function.contains(to) => at = to,
            (Kind::Jump, _) => return Ok(line),
            _ => at += instruction.length,
        }
    }
}

/// The row of one trampoline, reporting each rule its straight line
/// breaks to `broke`.
fn measure(
    target: &Target,
    bounds: &'static Trampoline,
    listing: &Listing,
    function: &Function,
    line: &[&Instruction],
    broke: &mut impl FnMut(Rule, String),
) -> Row {
    let show =
        |instruction: &Instruction| format!("{:x}: {}", instruction.address, instruction.text);
    if line.len() > bounds.instructions {
        broke(
            Rule::Instructions,
            format!(
                "{} instructions, bound {} ({})",
                line.len(),
                bounds.instructions,
                bounds.why
            ),
        );
    }
    let mut frame_bytes = 0;
    let mut frame = Vec::new();
    for instruction in line {
        for (pattern, bytes) in target.frame {
            if let Some(captures) = target::matches(pattern, &instruction.body) {
                frame_bytes += match bytes {
                    Bytes::Fixed(bytes) => *bytes,
                    Bytes::Immediate => captures
                        .first()
                        .and_then(|n| target::number(n))
                        .map_or(0, i64::unsigned_abs),
                };
                frame.push(show(instruction));
                break;
            }
        }
    }
    if frame_bytes > bounds.frame_bytes {
        broke(
            Rule::Frame,
            format!(
                "{frame_bytes} bytes, bound {}: {}",
                bounds.frame_bytes,
                frame.join("; ")
            ),
        );
    }
    let leaves = |instruction: &&&Instruction| match instruction.kind {
        Kind::Call => true,
        Kind::Jump => !instruction
            .destination
            .is_some_and(|to| function.contains(to)),
        _ => false,
    };
    let calls: Vec<String> = line.iter().filter(leaves).map(|i| show(i)).collect();
    if !calls.is_empty() {
        broke(Rule::Call, calls.join("; "));
    }
    let (label, pattern) = target.thread_pointer;
    let thread_pointer: Vec<&Instruction> = line
        .iter()
        .copied()
        .filter(|instruction| target::matches(pattern, &instruction.body).is_some())
        .collect();
    let slot_load = match thread_pointer.as_slice() {
        [one] => slot_load(target, line, one),
        _ => None,
    };
    if slot_load.is_none() {
        let found: Vec<String> = thread_pointer.iter().map(|i| show(i)).collect();
        broke(
            Rule::ThreadPointer,
            format!(
                "{} `{label}` accesses, one load of the slot wanted{}{}",
                found.len(),
                if found.is_empty() { "" } else { ": " },
                found.join("; ")
            ),
        );
    }
    let blocks: BTreeSet<u64> = line
        .iter()
        .flat_map(|i| [i.address, i.address + i.length - 1])
        .map(|address| address / target.fetch_line)
        .collect();
    if blocks.len() > bounds.lines {
        let (first, last) = (line[0], line[line.len() - 1]);
        broke(
            Rule::Lines,
            format!(
                "{:x} to {:x}: {} lines of {} bytes, bound {}",
                first.address,
                last.address + last.length - 1,
                blocks.len(),
                target.fetch_line,
                bounds.lines
            ),
        );
    }
    for instruction in line {
        if target::any(target.locked, &instruction.text) {
            broke(
                Rule::ReadModifyWrite,
                format!("locked: {}", show(instruction)),
            );
        }
    }
    let context = slot_load.and_then(|(load, register)| {
        let touched = context_accesses(target, line, load, register);
        for (instruction, start, end) in &touched {
            if *start < 0 || *end > target.cache_line as i64 {
                broke(
                    Rule::ContextLine,
                    format!("bytes {start}..{end} of the context: {}", show(instruction)),
                );
            }
            let (mnemonic, operands) = split(instruction);
            if target.read_modify_write.contains(&mnemonic)
                && operands
                    .split(',')
                    .next()
                    .is_some_and(|first| first.contains('['))
            {
                broke(
                    Rule::ReadModifyWrite,
                    format!("the context's bytes {start}..{end}: {}", show(instruction)),
                );
            }
        }
        let start = touched.iter().map(|(_, start, _)| *start).min()?;
        let end = touched.iter().map(|(_, _, end)| *end).max()?;
        Some((start, end))
    });
    let aligned = target
        .trampoline_alignment
        .is_none_or(|alignment| function.address.is_multiple_of(alignment));
    if !aligned {
        broke(Rule::Aligned, format!("starts at {:#x}", function.address));
    }
    let cold_calls = listing
        .code(function)
        .filter(|i| matches!(i.kind, Kind::Call | Kind::Jump))
        .filter(|i| i.symbol.as_deref() == Some(bounds.cold))
        .count();
    if cold_calls != 1 {
        broke(
            Rule::ColdCallOnce,
            format!("{} called from {cold_calls} places", bounds.cold),
        );
    }
    Row {
        bounds,
        line: line.iter().map(|i| show(i)).collect(),
        instructions: line.len(),
        frame_bytes,
        calls: calls.len(),
        thread_pointer: thread_pointer.len(),
        lines: blocks.len(),
        context,
        aligned,
        cold_calls,
    }
}

/// The slot's load, given the straight line's one `access` relative to
/// the thread pointer: `access` itself (x86's `fs:`), or the first load
/// after it based on the register it read the thread pointer into
/// (aarch64's `mrs`). With the register the load puts the context's
/// address in.
fn slot_load<'a>(
    target: &Target,
    line: &[&'a Instruction],
    access: &'a Instruction,
) -> Option<(&'a Instruction, &'a str)> {
    if let Some(captures) = target::matches(target.slot_load, &access.body) {
        return Some((access, captures[0]));
    }
    let pointer = *target::matches(target.thread_pointer.1, &access.body)?.first()?;
    line.iter()
        .skip_while(|i| i.address != access.address)
        .skip(1)
        .find_map(|instruction| {
            let captures = target::matches(target.slot_load, &instruction.body)?;
            (captures.get(1) == Some(&pointer)).then_some((*instruction, captures[0]))
        })
}

/// The context bytes the straight line reads or writes after `load` put
/// the context's address in `register`, until something else is written
/// there: each access's instruction, first byte and end.
fn context_accesses<'a>(
    target: &Target,
    line: &[&'a Instruction],
    load: &Instruction,
    register: &str,
) -> Vec<(&'a Instruction, i64, i64)> {
    let Some(register) = (target.register)(register) else {
        return Vec::new();
    };
    let mut touched = Vec::new();
    for instruction in line
        .iter()
        .skip_while(|i| i.address != load.address)
        .skip(1)
    {
        for (pattern, sign) in target.memory {
            let Some(captures) = target::matches(pattern, &instruction.body) else {
                continue;
            };
            if (target.register)(captures[0]) != Some(register) {
                continue;
            }
            let offset = captures.get(1).and_then(|n| target::number(n)).unwrap_or(0) * sign;
            let size = target
                .operand_sizes
                .iter()
                .find(|(name, _)| instruction.body.contains(name))
                .map_or(target.operand_size, |(_, size)| *size);
            touched.push((*instruction, offset, offset + size as i64));
            break;
        }
        let (mnemonic, operands) = split(instruction);
        let first = operands.split(',').next().unwrap_or("");
        if !target.reads_only.contains(&mnemonic) && (target.register)(first) == Some(register) {
            break;
        }
    }
    touched
}

/// An instruction's mnemonic and operands.
fn split(instruction: &Instruction) -> (&str, &str) {
    instruction
        .body
        .split_once(' ')
        .unwrap_or((&instruction.body, ""))
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
            "context bytes".to_owned(),
            "aligned".to_owned(),
            "cold call sites".to_owned(),
        ]];
        for row in &self.rows {
            table.push([
                row.bounds.symbol.to_owned(),
                format!("{} / {}", row.instructions, row.bounds.instructions),
                format!("{} / {}", row.frame_bytes, row.bounds.frame_bytes),
                row.calls.to_string(),
                row.thread_pointer.to_string(),
                format!("{} / {}", row.lines, row.bounds.lines),
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
                .any(|v| v.subject == row.bounds.symbol)
            {
                writeln!(f, "the straight line of {}:", row.bounds.symbol)?;
                for instruction in &row.line {
                    writeln!(f, "    {instruction}")?;
                }
            }
        }
        Ok(())
    }
}
