//! Unwinding out of a callback's TLS descriptor call in dynamic TLS, from a
//! C program: a profiler's or debugger's walk of the stack, started inside
//! glibc's resolver, reaches the callback's caller.

use crate::host;

use std::time::Duration;

/// The fixture in dynamic TLS, `plain` called in a loop under a
/// timer's `SIGPROF` storm whose handler takes a backtrace (glibc's, through the
/// unwind tables): every sample taken inside the dynamic linker's resolver
/// ends in the frames below the loop. On x86-64 the trampolines call the
/// resolver from instructions of their own that move the stack pointer;
/// without their unwind rows every such walk goes astray (checked against
/// a build without them: 60 of 60 samples in the resolver broken). On
/// aarch64 the call is made out of line, from `call_cold`.
#[test]
fn a_backtrace_from_inside_the_tls_resolver_reaches_the_caller() {
    let mut command = host::host("unwind");
    command
        .env("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=0")
        .env("CALLGATE_EXPECT_DYNAMIC_TLS", "1");
    let outcome = host::run(&mut command, Duration::from_secs(120));
    outcome.assert_ok();
    assert!(
        outcome.number("in_resolver") >= 20.0,
        "too few samples in the resolver to tell\n{outcome}"
    );
    assert_eq!(outcome.number("broken"), 0.0, "{outcome}");
}

/// The out-of-line instructions' unwind rows say the stack pointer is as
/// at the function's entry (8 bytes off, no frame set up) where they are
/// entered: true of every place in the fixture that can jump to them.
///
/// Each descriptor call tests the stack pointer's alignment and jumps out
/// of line where it is 8 bytes off a multiple of 16. Read off the
/// fixture's code (`objdump`) and unwind tables (`readelf`), at each such
/// jump the function's own rows put the return address at a distance from
/// the stack pointer that is either a multiple of 16 plus 8 (the stack
/// pointer then 8 bytes off, so the jump is taken) and then exactly 8 (no
/// frame), or not (aligned: the jump is never taken). And the out-of-line
/// instructions' rows hold the return address 16 bytes up while the stack
/// pointer is moved, at the call. A function whose compiled code jumped
/// out with a frame set up would make an unwinder that stops in the
/// resolver read a saved register as the return address.
#[test]
fn the_out_of_line_descriptor_calls_are_entered_with_no_frame() {
    let library = host::fixture();
    if machine(&library) != X86_64 {
        eprintln!(
            "SKIPPED: {} is not x86-64 code (aarch64: the_descriptor_calls_are_made_with_the_return_address_saved)",
            library.display()
        );
        return;
    }
    let code = tool_output("objdump", &["-d", "--no-show-raw-insn"], &library);
    let instructions = instructions(&code);
    if !code.contains("<__callgate_slot_probe>:") {
        eprintln!(
            "SKIPPED: {} reads its slot without a TLS descriptor (portable slot or another target)",
            library.display()
        );
        return;
    }
    let tables = UnwindTables::parse(&tool_output(
        "readelf",
        &["--debug-dump=frames-interp"],
        &library,
    ));
    let at = |address: u64| {
        instructions
            .binary_search_by_key(&address, |(at, _)| *at)
            .ok()
    };
    let (mut checked, mut taken) = (0, 0);
    for pair in instructions.windows(2) {
        let [(_, test), (jump_at, jump)] = pair else {
            unreachable!()
        };
        if !test.starts_with("test") || !test.contains("$0xf,%spl") {
            continue;
        }
        let target = jump
            .strip_prefix("jne")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
            .unwrap_or_else(|| {
                panic!("the alignment test at {jump_at:#x} is not followed by a jne: {jump}")
            });
        let island = at(target).unwrap_or_else(|| panic!("no instruction at {target:#x}"));
        assert_eq!(
            instructions[island].1, "sub $0x8,%rsp",
            "the out-of-line call at {target:#x}"
        );
        checked += 1;
        let offset = tables.cfa_rsp_offset(*jump_at);
        if offset % 16 == 8 {
            taken += 1;
            assert_eq!(
                offset, 8,
                "at {jump_at:#x} the stack pointer is 8 bytes off with a frame set up: \
                 the out-of-line call's unwind rows would be wrong"
            );
        }
        // The call itself, after `sub rsp, 8` and the `lea`.
        let call = instructions[island + 2].0;
        assert!(
            instructions[island + 2].1.starts_with("call"),
            "{:?}",
            &instructions[island..island + 3]
        );
        assert_eq!(
            tables.cfa_rsp_offset(call),
            16,
            "the out-of-line call at {call:#x}"
        );
    }
    assert!(
        checked > 0,
        "no descriptor call found in {}",
        library.display()
    );
    // An optimised build's trampolines make the call with no frame set up;
    // a debug build's functions all set one up first.
    if host::fixture_is_release() {
        assert!(
            taken > 0,
            "no trampoline's fast path reaches the out-of-line call"
        );
    }
    eprintln!("{checked} descriptor calls, {taken} of them reaching the out-of-line call");
}

/// On aarch64 every descriptor call (`blr x1` after the descriptor's
/// `ldr x1, [x0, …]` and `add x0, x0, …`) is made where the function's
/// unwind rows hold the return address saved in its frame: the compiler
/// saved `x30`, which the call overwrites, so an unwinder that stops in
/// the resolver walks out through the caller's frame. And no trampoline
/// makes one (`tests/codegen`).
#[test]
fn the_descriptor_calls_are_made_with_the_return_address_saved() {
    let library = host::fixture();
    if machine(&library) != AARCH64 {
        eprintln!("SKIPPED: {} is not aarch64 code", library.display());
        return;
    }
    let code = tool_output(
        "aarch64-linux-gnu-objdump",
        &["-d", "--no-show-raw-insn"],
        &library,
    );
    let instructions = instructions(&code);
    let tables = UnwindTables::parse(&tool_output(
        "readelf",
        &["--debug-dump=frames-interp"],
        &library,
    ));
    let mut checked = 0;
    for (index, (call, text)) in instructions.iter().enumerate() {
        if text != "blr x1" {
            continue;
        }
        // The probe puts one instruction between the `add` and the call.
        let before = &instructions[index.saturating_sub(4)..index];
        let descriptor = before
            .iter()
            .any(|(_, text)| text.starts_with("ldr x1, [x0, #"))
            && before
                .iter()
                .any(|(_, text)| text.starts_with("add x0, x0, #"));
        if !descriptor {
            continue;
        }
        checked += 1;
        let saved = tables.rule(*call, "ra");
        assert!(
            saved.as_deref().is_some_and(|rule| rule.starts_with("c-")),
            "the descriptor call at {call:#x}: the return address is {saved:?}, not saved in a frame"
        );
    }
    assert!(
        checked > 0,
        "no descriptor call found in {}",
        library.display()
    );
    eprintln!("{checked} descriptor calls, each with the return address saved");
}

/// The ELF machine of `library` (`e_machine`).
fn machine(library: &std::path::Path) -> u16 {
    let header = std::fs::read(library).expect("read the fixture");
    u16::from_le_bytes([header[18], header[19]])
}

const X86_64: u16 = 62;
const AARCH64: u16 = 183;

/// What `tool` prints for `library`.
fn tool_output(tool: &str, args: &[&str], library: &std::path::Path) -> String {
    let output = std::process::Command::new(tool)
        .args(args)
        .arg(library)
        .output()
        .unwrap_or_else(|e| panic!("run {tool} (binutils): {e}"));
    assert!(output.status.success(), "{tool} failed: {output:?}");
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The (address, text) of every instruction `objdump -d` printed, in
/// address order, its fields one space apart.
fn instructions(code: &str) -> Vec<(u64, String)> {
    let mut found: Vec<(u64, String)> = code
        .lines()
        .filter_map(|line| {
            let (address, text) = line.trim_start().split_once(":\t")?;
            let address = u64::from_str_radix(address, 16).ok()?;
            // One space between fields, whatever the padding.
            Some((
                address,
                text.split_whitespace().collect::<Vec<_>>().join(" "),
            ))
        })
        .collect();
    found.sort_by_key(|(address, _)| *address);
    found
}

/// One row of an unwind table: from this address on, the rule of each
/// column, the CFA's first.
type Row = (u64, Vec<String>);

/// One FDE of `readelf --debug-dump=frames-interp`: the addresses it covers,
/// its columns (`CFA`, then registers: `x29`, `ra`, …) and its rows (an
/// FDE without rows of its own keeps its CIE's).
struct Fde {
    start: u64,
    end: u64,
    columns: Vec<String>,
    rows: Vec<Row>,
}

/// The FDEs of a library's `.eh_frame`, by address.
struct UnwindTables {
    fdes: Vec<Fde>,
}

impl UnwindTables {
    fn parse(text: &str) -> Self {
        let mut fdes: Vec<Fde> = Vec::new();
        let mut cie_cfa: Option<String> = None;
        let mut in_cie = false;
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            if line.contains(" CIE ") {
                in_cie = true;
                cie_cfa = None;
            } else if let Some(range) = line.split(" pc=").nth(1) {
                in_cie = false;
                let (start, end) = range.trim().split_once("..").expect("pc=start..end");
                let parse = |hex: &str| u64::from_str_radix(hex, 16).expect("an address");
                let start = parse(start);
                // Until its own rows come, the CIE's initial row.
                fdes.push(Fde {
                    start,
                    end: parse(end),
                    columns: vec!["CFA".to_owned()],
                    rows: cie_cfa
                        .iter()
                        .map(|cfa| (start, vec![cfa.clone()]))
                        .collect(),
                });
            } else if fields.next() == Some("LOC") {
                if let (false, Some(fde)) = (in_cie, fdes.last_mut()) {
                    fde.columns = fields.map(str::to_owned).collect();
                }
            } else {
                // A row: a 16-digit address, then the rule of each column.
                let mut fields = line.split_whitespace();
                let Some(address) = fields.next() else {
                    continue;
                };
                let Ok(at) = u64::from_str_radix(address, 16) else {
                    continue;
                };
                let rules: Vec<String> = fields.map(str::to_owned).collect();
                if address.len() != 16 || rules.is_empty() {
                    continue;
                }
                if in_cie {
                    cie_cfa = Some(rules[0].clone());
                } else if let Some(fde) = fdes.last_mut() {
                    // An FDE's own first row replaces the CIE's.
                    fde.rows.retain(|(row_at, _)| *row_at != at);
                    fde.rows.push((at, rules));
                }
            }
        }
        fdes.sort_by_key(|fde| fde.start);
        Self { fdes }
    }

    /// The FDE covering `address` and its row there; panics where there is
    /// none.
    fn row(&self, address: u64) -> (&Fde, &[String]) {
        let fde = self
            .fdes
            .iter()
            .find(|fde| (fde.start..fde.end).contains(&address))
            .unwrap_or_else(|| panic!("no unwind information covers {address:#x}"));
        let (_, rules) = fde
            .rows
            .iter()
            .rev()
            .find(|(at, _)| *at <= address)
            .unwrap_or_else(|| panic!("no row at {address:#x}"));
        (fde, rules)
    }

    /// N where the CFA at `address` is `rsp+N`; panics where no FDE covers
    /// it or the CFA is another register's.
    fn cfa_rsp_offset(&self, address: u64) -> u64 {
        let (_, rules) = self.row(address);
        let cfa = &rules[0];
        cfa.strip_prefix("rsp+")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the CFA at {address:#x} is {cfa}, not rsp-based"))
    }

    /// The rule of `column` (a register's name, `ra`) at `address`, if the
    /// row has one: `c-16` (saved 16 bytes below the CFA), `u`, ….
    fn rule(&self, address: u64, column: &str) -> Option<String> {
        let (fde, rules) = self.row(address);
        let index = fde.columns.iter().position(|name| name == column)?;
        rules.get(index).cloned()
    }
}
