//! The rules, checked on a library's listing (the report of what broke:
//! `report.rs`).

use std::collections::BTreeSet;
use std::path::Path;

use crate::disassembly::{Function, Instruction, Kind, Listing};
use crate::report::{Report, Row, Violation};
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
    LockedFirst,
    Aligned,
    ColdCallOnce,
    BindFirst,
}

impl Rule {
    pub fn what(self) -> &'static str {
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
            Rule::ContextLine => {
                "the straight line touches the context's first line only (a closure's: the \
                 table's bytes)"
            }
            Rule::ReadModifyWrite => {
                "no read-modify-write of the context, no locked instruction, on the straight line \
                 (a closure's: the table's)"
            }
            Rule::LockedFirst => {
                "the first locked instruction before the first store to the call's records"
            }
            Rule::Aligned => "the trampoline starts on a fetch-line boundary",
            Rule::ColdCallOnce => "the cold function is called from one place",
            Rule::BindFirst => "one bind_first, aligned and within one page",
        }
    }

    pub fn fix(self) -> &'static str {
        match self {
            Rule::Present => "was the fixture's callback renamed? The table names its symbol.",
            Rule::StraightLine => {
                "read the trampoline's code: the guard found no return before the function's end, \
                 or a loop."
            }
            Rule::Instructions => {
                "the fast path grew: compare its straight line (below) with the last good build's. \
                 Keep new work off the fast path; if the growth is meant, raise the bound in the \
                 table (tests/codegen/targets.rs) and say why."
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
            Rule::LockedFirst => {
                "a locked instruction waits for every store before it: `run_turn` \
                 (closure/call.rs) takes the turn before `call_from_at` writes the call's records, \
                 and ends it after they are cleared."
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
                subject: bounds.name(),
                rule,
                detail,
            });
        };
        let function = match bounds.via {
            None => listing.function(bounds.symbol),
            Some(via) => loaded_by(target, listing, via, bounds.symbol),
        };
        let Some(function) = function else {
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

/// The function named `symbol` whose address the function `via` loads
/// (objdump's comment on the load names it: `# <hex> <symbol>`).
fn loaded_by<'a>(
    target: &Target,
    listing: &'a Listing,
    via: &str,
    symbol: &str,
) -> Option<&'a Function> {
    let named = format!(" <{symbol}>");
    let address = listing
        .code(listing.function(via)?)
        .find_map(|instruction| {
            let (_, comment) = instruction.text.split_once(target.comment)?;
            let hex = comment.trim().strip_suffix(&named)?;
            u64::from_str_radix(hex, 16).ok()
        })?;
    listing
        .functions
        .iter()
        .find(|function| function.address == address && function.name == symbol)
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
    let locked: Vec<&Instruction> = line
        .iter()
        .copied()
        .filter(|instruction| target::any(target.locked, &instruction.text))
        .collect();
    if locked.len() > bounds.locked {
        for instruction in &locked {
            broke(
                Rule::ReadModifyWrite,
                format!(
                    "locked ({} of {} allowed): {}",
                    locked.len(),
                    bounds.locked,
                    show(instruction)
                ),
            );
        }
    }
    let context = slot_load.and_then(|(load, register)| {
        let touched = context_accesses(target, line, load, register);
        let writes_memory = |instruction: &Instruction| {
            let (mnemonic, operands) = split(instruction);
            !target.reads_only.contains(&mnemonic)
                && operands
                    .split(',')
                    .next()
                    .is_some_and(|first| first.contains('['))
        };
        let mut counts = Vec::new();
        for (instruction, start, end) in &touched {
            if *start < 0 || *end > bounds.context_bytes {
                broke(
                    Rule::ContextLine,
                    format!("bytes {start}..{end} of the context: {}", show(instruction)),
                );
            }
            if target.read_modify_write.contains(&split(instruction).0)
                && writes_memory(instruction)
            {
                counts.push(format!(
                    "the context's bytes {start}..{end}: {}",
                    show(instruction)
                ));
            }
        }
        if counts.len() > bounds.context_writes {
            for count in counts {
                broke(Rule::ReadModifyWrite, count);
            }
        }
        if bounds.locked_first {
            let first_lock = locked.first().map(|instruction| instruction.address);
            let first_record = touched
                .iter()
                .find(|(instruction, start, _)| {
                    *start < target.cache_line as i64 && writes_memory(instruction)
                })
                .map(|(instruction, _, _)| instruction);
            if let (Some(lock), Some(record)) = (first_lock, first_record) {
                if record.address < lock {
                    broke(
                        Rule::LockedFirst,
                        format!("{} before the lock at {lock:x}", show(record)),
                    );
                }
            } else if first_lock.is_none() {
                broke(Rule::LockedFirst, "no locked instruction".to_owned());
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
        locked: locked.len(),
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
