//! The codegen guard: the trampolines' fast paths, read off the machine
//! code of the benchmark fixture's release build (`bench/fixture`), held
//! to the rules the runtime's comments state for them.
//!
//! # The straight line
//!
//! A trampoline's *straight line* is the run of instructions from its
//! entry through every conditional branch not taken, and every jump within
//! the function, up to and including the first return (or a jump out of
//! the function: a tail call). The runtime lays its fast path out so:
//! every rare case (no static offset recorded, a thread not bound, a call
//! already running) branches away to code placed after that return
//! (`hint::rarely_taken_here!`, the `#[cold]` `call_cold`). So the
//! straight line is a call on a bound thread with no call running, its
//! slot read at the static offset: the bound fast path (`boundary::call`,
//! `local_on`). For `bench_per_call` it is that path too (a bound thread
//! calling a per-call callback); the per-call fast path, which takes a
//! cached context back, lies after it, reached by two taken branches, and
//! is not guarded.
//!
//! # The rules
//!
//! On each trampoline's straight line:
//!
//! - at most the table's instructions (today's count);
//! - no frame: no push, no move of the stack pointer, beyond the table's
//!   bytes (none where the body reaches nothing that needs the call's
//!   records, `boundary::slow::call_cold`: `bench_bound` and `bench_local`;
//!   the table says why the other two have one);
//! - no call, and no jump out of the function;
//! - one access relative to the thread pointer, the slot's load at its
//!   static offset (`tls/x86_64_linux_gnu/static_offset.rs`, `static_at`;
//!   on aarch64 one read of the thread pointer, then the load);
//! - within the table's number of 64-byte lines (one for an `int (int)`
//!   callback: `boundary::straight::align_to_fetch_line`);
//! - through the slot's value, only the context's first 64 bytes (the
//!   fields a bound call touches come first: `context::Context`);
//! - no read-modify-write of the context and no locked instruction: the
//!   fast path counts nothing (`Context::outer_token`) and takes no lock.
//!
//! A closure's C function is an instance of a generic, found through the
//! fixture function that hands it to C (`bench_closure`). The table gives
//! it its locked instructions, the context bytes it touches and the
//! counts it makes there (a `Closure::new` call's turn and the note of
//! it); its first locked instruction must come before the line's first
//! store to the context's first line, where the call's records are
//! (`closure::call::run_turn`: a locked instruction waits for every store
//! before it).
//!
//! And over each trampoline and the library: the trampoline starts on a
//! 64-byte boundary (`align_to_fetch_line`) and calls its cold function
//! from one place (`call_cold`, `call_local_cold`); `bind_first`, one
//! copy for every callback, starts on a 1 KiB boundary and lies within one
//! page (`boundary::slow::bind_first`).
//!
//! A build with `--cfg callgate_portable_tls` reads the slot through
//! `thread_local!`, a call (`__tls_get_addr` on x86-64, the TLS descriptor
//! on aarch64): the guard must reject it, and a test checks that it does.
//! The guard reads the build of the pinned toolchain; another compiler may
//! lay the code out otherwise.
//!
//! # The targets
//!
//! An entry of [`TARGETS`] each: its triple, its objdump, how that objdump
//! writes a return, a jump, a branch, a call, a frame's set-up and an
//! access relative to the thread pointer, and its trampolines' bounds. The
//! guard reads the host's entry; `CALLGATE_CODEGEN_TARGETS` names others,
//! built with `--target` (and the entry's linker) and read with their
//! objdump: the aarch64 row (`scripts/aarch64.sh`) reads
//! `aarch64-unknown-linux-gnu` with `aarch64-linux-gnu-objdump`, in its
//! own target directory, whose runtime build it shares.

mod disassembly;
mod fixture;
mod report;
mod rules;
mod target;
mod targets;

use std::path::Path;

use disassembly::Listing;
use report::Report;
use rules::Rule;
use target::{Regression, Target};
use targets::TARGETS;

/// The targets the guard reads: those `CALLGATE_CODEGEN_TARGETS` names
/// (triples, separated by spaces or commas; the aarch64 row names its
/// own), else the compiler's host's (x86-64 Linux's where the table has
/// none for the host).
fn selected() -> Vec<&'static Target> {
    if let Some(names) = std::env::var_os("CALLGATE_CODEGEN_TARGETS") {
        let names = names.to_string_lossy().into_owned();
        return names
            .split([' ', ','])
            .filter(|name| !name.is_empty())
            .map(|name| {
                TARGETS
                    .iter()
                    .find(|target| target.triple == name)
                    .unwrap_or_else(|| panic!("the codegen guard has no entry for {name}"))
            })
            .collect();
    }
    let host = fixture::host();
    vec![
        TARGETS
            .iter()
            .find(|target| target.triple == host)
            .unwrap_or(&TARGETS[0]),
    ]
}

/// The fixture's release build for `target` (with the regression's flags,
/// if given), checked; `None`, saying `SKIPPED`, where this machine lacks
/// the target's objdump (a failure under CI).
fn guard(target: &'static Target, regression: Option<&Regression>) -> Option<Report> {
    if let Some(why) = fixture::missing(target) {
        assert!(
            std::env::var_os("CI").is_none_or(|ci| ci != "true"),
            "the codegen guard {why}"
        );
        eprintln!("SKIPPED: the codegen guard for {}: {why}", target.triple);
        return None;
    }
    let library = fixture::build(
        target,
        regression.map(|regression| (regression.rustflags, regression.target_dir)),
    );
    let listing = Listing::read(target, &library).unwrap_or_else(|error| panic!("{error}"));
    Some(rules::check(target, &library, &listing))
}

/// The release build keeps every rule.
#[test]
fn the_fast_paths_keep_their_rules() {
    for target in selected() {
        let Some(report) = guard(target, None) else {
            continue;
        };
        assert!(report.violations.is_empty(), "\n{report}");
        eprintln!("{report}");
    }
}

/// The regression's build breaks the rules it must break on every
/// trampoline: the guard would catch a change that made the fast path
/// read the slot so. It builds the fixture once more: run it with
/// `-- --ignored` (the synthetic listings below test the rules on every
/// run).
#[test]
#[ignore = "builds the fixture again with the regression: run it with -- --ignored"]
fn a_regressed_build_breaks_them() {
    for target in selected() {
        let regression = &target.regression;
        let Some(report) = guard(target, Some(regression)) else {
            continue;
        };
        for trampoline in target.trampolines {
            for rule in regression.breaks {
                assert!(
                    report.broke(&trampoline.name(), *rule),
                    "with {}, {} should break {rule:?}\n{report}",
                    regression.what,
                    trampoline.name()
                );
            }
        }
        eprintln!("{report}");
    }
}

#[test]
fn patterns_capture_registers_and_numbers() {
    let captures = |pattern, text| target::matches(pattern, text);
    assert_eq!(
        captures("mov {r},QWORD PTR fs:[*]", "mov rcx,QWORD PTR fs:[rcx]"),
        Some(vec!["rcx"])
    );
    assert_eq!(
        captures("*PTR [{r}+{n}]*", "cmp rdx,QWORD PTR [rcx+0x20]"),
        Some(vec!["rcx", "0x20"])
    );
    assert_eq!(
        captures("*PTR [{r}]*", "mov rax,QWORD PTR [rip+0x10]"),
        None
    );
    assert_eq!(
        captures("j* *", "jne 1bb50 <bench_bound+0x50>"),
        Some(vec![])
    );
    assert_eq!(target::number("0x20"), Some(32));
    assert_eq!(target::number("-16"), Some(-16));
}

/// The rules that the regression's build keeps are checked too: a made-up
/// `bench_bound` off its line, counting in its context beyond the first
/// line, with a locked add, that calls `call_cold` from two places.
#[test]
fn a_listing_that_breaks_the_other_rules_is_reported() {
    let dump = "SYMBOL TABLE:\n\
        0000000000001010 g     F .text\t0000000000000030              bench_bound\n\
        \n\
        0000000000001010 <bench_bound>:\n\
        \x20   1010:\tmov    rcx,QWORD PTR [rip+0x100]        # 2000 <x>\n\
        \x20   1017:\tmov    rcx,QWORD PTR fs:[rcx]\n\
        \x20   101b:\tinc    QWORD PTR [rcx+0x8]\n\
        \x20   101f:\tmov    QWORD PTR [rcx+0x40],rax\n\
        \x20   1023:\tlock add DWORD PTR [rip+0x10],0x1        # 2010 <y>\n\
        \x20   102b:\tret\n\
        \x20   102c:\tcall   1100 <callgate::boundary::call_cold>\n\
        \x20   1031:\tcall   1100 <callgate::boundary::call_cold>\n\
        \x20   1036:\tret\n";
    let target = &TARGETS[0];
    let listing = Listing::parse(target, dump);
    let report = rules::check(target, std::path::Path::new("made-up"), &listing);
    for rule in [
        Rule::ContextLine,
        Rule::ReadModifyWrite,
        Rule::Aligned,
        Rule::ColdCallOnce,
    ] {
        assert!(report.broke("bench_bound", rule), "{rule:?}\n{report}");
    }
    for rule in [
        Rule::Instructions,
        Rule::Frame,
        Rule::Call,
        Rule::ThreadPointer,
    ] {
        assert!(!report.broke("bench_bound", rule), "{rule:?}\n{report}");
    }
    let read_modify_writes = report
        .violations
        .iter()
        .filter(|violation| violation.rule == Rule::ReadModifyWrite)
        .count();
    assert_eq!(read_modify_writes, 2, "{report}");
}

/// A `Closure::new` trampoline, found through the function that hands it
/// to C, as it was before its turn moved out of the call: the turn taken
/// after the call's records are written breaks the rule that it comes
/// first; a third locked instruction, and counts in the context beyond
/// the note's two, break the bound on them.
#[test]
fn a_turn_taken_after_the_calls_records_is_reported() {
    const SYMBOL: &str = "callgate::closure::call::data_first_1";
    let dump = "SYMBOL TABLE:\n\
        0000000000001000 g     F .text\t0000000000000010              bench_closure\n\
        0000000000001040 l     F .text\t0000000000000040              callgate::closure::call::data_first_1\n\
        0000000000001080 l     F .text\t0000000000000040              callgate::closure::call::data_first_1\n\
        \n\
        0000000000001000 <bench_closure>:\n\
        \x20   1000:\tlea    rax,[rip+0x79]        # 1080 <callgate::closure::call::data_first_1>\n\
        \x20   1007:\tret\n\
        0000000000001040 <callgate::closure::call::data_first_1>:\n\
        \x20   1040:\tret\n\
        0000000000001080 <callgate::closure::call::data_first_1>:\n\
        \x20   1080:\tmov    rcx,QWORD PTR [rip+0x100]        # 2000 <x>\n\
        \x20   1087:\tmov    r12,QWORD PTR fs:[rcx]\n\
        \x20   108b:\tmov    QWORD PTR [r12],0x1\n\
        \x20   1093:\tinc    QWORD PTR [r12+0xf8]\n\
        \x20   109b:\tinc    QWORD PTR [r12+0xf0]\n\
        \x20   109f:\tdec    QWORD PTR [r12+0xe8]\n\
        \x20   10a3:\tlock cmpxchg QWORD PTR [r14+0x38],r12\n\
        \x20   10a9:\txchg   QWORD PTR [r15],rsi\n\
        \x20   10ac:\tlock add DWORD PTR [rip+0x10],0x1        # 2010 <y>\n\
        \x20   10b4:\tret\n\
        \x20   10b5:\tcall   1100 <callgate::boundary::slow::call_cold>\n";
    let target = &TARGETS[0];
    let listing = Listing::parse(target, dump);
    let report = rules::check(target, Path::new("made-up"), &listing);
    let name = format!("{SYMBOL} (bench_closure's)");
    assert!(!report.broke(&name, Rule::Present), "{report}");
    for rule in [Rule::LockedFirst, Rule::ReadModifyWrite] {
        assert!(report.broke(&name, rule), "{rule:?}\n{report}");
    }
    for rule in [Rule::ThreadPointer, Rule::ContextLine, Rule::ColdCallOnce] {
        assert!(!report.broke(&name, rule), "{rule:?}\n{report}");
    }
    let read_modify_writes = report
        .violations
        .iter()
        .filter(|violation| violation.subject == name && violation.rule == Rule::ReadModifyWrite)
        .count();
    assert_eq!(read_modify_writes, 3 + 3, "{report}");
}

/// aarch64's syntax, as `aarch64-linux-gnu-objdump` writes it: a made-up
/// `bench_bound` in the shape of the real one keeps every rule it can
/// keep alone; one with a frame, a call, an atomic add and a context
/// access past the first line breaks those rules.
#[test]
fn an_aarch64_listing_is_read_as_objdump_writes_it() {
    let target = TARGETS
        .iter()
        .find(|target| target.triple == "aarch64-unknown-linux-gnu")
        .expect("an aarch64 entry");
    let dump = |body: &str| {
        format!(
            "SYMBOL TABLE:\n\
             0000000000001000 g     F .text\t0000000000000050 bench_bound\n\
             \n\
             0000000000001000 <bench_bound>:\n{body}"
        )
    };
    let lean = dump(
        "    1000:\tadrp\tx8, 70000 <__dso_handle>\n\
         \x20   1004:\tadd\tx8, x8, #0xc00\n\
         \x20   1008:\tldar\tx8, [x8]\n\
         \x20   100c:\tcbz\tx8, 1034 <bench_bound+0x34>\n\
         \x20   1010:\tmrs\tx9, tpidr_el0\n\
         \x20   1014:\tldr\tx8, [x9, x8]\n\
         \x20   1018:\tcmp\tx8, #0x2\n\
         \x20   101c:\tb.cc\t1034 <bench_bound+0x34>  // b.lo, b.ul, b.last\n\
         \x20   1020:\tldr\tx9, [x8]\n\
         \x20   1024:\tcbnz\tx9, 1034 <bench_bound+0x34>\n\
         \x20   1028:\tadd\tw0, w0, #0x1\n\
         \x20   102c:\tstp\txzr, xzr, [x8]\n\
         \x20   1030:\tret\n\
         \x20   1034:\tstp\tx29, x30, [sp, #-16]!\n\
         \x20   1038:\tbl\t4000 <callgate::boundary::slow::call_cold>\n\
         \x20   103c:\tldp\tx29, x30, [sp], #16\n\
         \x20   1040:\tret\n",
    );
    let report = rules::check(target, Path::new("made-up"), &Listing::parse(target, &lean));
    let kept = report
        .violations
        .iter()
        .all(|violation| violation.subject != "bench_bound");
    assert!(kept, "{report}");
    assert!(report.to_string().contains("13 / 14"), "{report}");
    assert!(report.to_string().contains("0..16"), "{report}");

    let heavy = dump(
        "    1000:\tstp\tx29, x30, [sp, #-32]!\n\
         \x20   1004:\tadrp\tx0, 6f000 <x>\n\
         \x20   1008:\tldr\tx1, [x0, #3784]\n\
         \x20   100c:\tadd\tx0, x0, #0xec8\n\
         \x20   1010:\tblr\tx1\n\
         \x20   1014:\tmrs\tx8, tpidr_el0\n\
         \x20   1018:\tldr\tx8, [x8, x0]\n\
         \x20   101c:\tldr\tx9, [x8, #64]\n\
         \x20   1020:\tldaddal\tx9, x10, [x8]\n\
         \x20   1024:\tldp\tx29, x30, [sp], #32\n\
         \x20   1028:\tret\n\
         \x20   102c:\tbl\t4000 <callgate::boundary::slow::call_cold>\n",
    );
    let report = rules::check(
        target,
        Path::new("made-up"),
        &Listing::parse(target, &heavy),
    );
    for rule in [
        Rule::Frame,
        Rule::Call,
        Rule::ContextLine,
        Rule::ReadModifyWrite,
    ] {
        assert!(report.broke("bench_bound", rule), "{rule:?}\n{report}");
    }
    for rule in [Rule::ThreadPointer, Rule::Lines, Rule::ColdCallOnce] {
        assert!(!report.broke("bench_bound", rule), "{rule:?}\n{report}");
    }
}
