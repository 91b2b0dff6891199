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
//!   static offset (`tls/x86_64_linux_gnu/static_offset.rs`, `static_at`);
//! - within the table's number of 64-byte lines (one for an `int (int)`
//!   callback: `boundary::straight::align_to_fetch_line`);
//! - through the slot's value, only the context's first 64 bytes (the
//!   fields a bound call touches come first: `context::Context`);
//! - no read-modify-write of the context and no locked instruction: the
//!   fast path counts nothing (`Context::outer_token`) and takes no lock.
//!
//! And over each trampoline and the library: the trampoline starts on a
//! 64-byte boundary (`align_to_fetch_line`) and calls its cold function
//! from one place (`call_cold`, `call_local_cold`); `bind_first`, one
//! copy for every callback, starts on a 1 KiB boundary and lies within one
//! page (`boundary::slow::bind_first`).
//!
//! A build with `--cfg callgate_portable_tls` reads the slot through
//! `thread_local!`, a call to `__tls_get_addr`: the guard must reject it,
//! and a test checks that it does. The guard reads the build of the
//! pinned toolchain; another compiler may lay the code out otherwise.
//!
//! # Another target
//!
//! An entry of [`TARGETS`]: its triple, its objdump, how that objdump
//! writes a return, a jump, a branch, a call, a frame's set-up and an
//! access relative to the thread pointer (aarch64: `ret`, `b`, `b.ne` and
//! `cbz`, `bl` and `blr`, `stp x29, x30, [sp, #-{n}]!`, `mrs {r},
//! tpidr_el0`), and its trampolines' bounds. It is built with `--target`
//! and read with its objdump (`aarch64-linux-gnu-objdump`). (On aarch64
//! the runtime reads its slot through `thread_local!` today, with a call:
//! the rules above hold there only once it reads it as on x86-64.)

mod disassembly;
mod fixture;
mod rules;
mod target;

use disassembly::Listing;
use rules::{Report, Rule};
use target::{Bytes, Regression, Target, Trampoline};

/// The targets the guard reads, with every trampoline's bounds.
static TARGETS: &[Target] = &[Target {
    triple: "x86_64-unknown-linux-gnu",
    objdump: "objdump",
    objdump_args: &["-M", "intel"],
    comment: "#",
    prefixes: &[
        "data16", "rex.W", "cs", "ds", "lock", "rep", "repz", "repnz", "bnd", "notrack",
    ],
    ret: &["ret", "ret *"],
    jump: &["jmp *"],
    branch: &["j* *", "loop* *"],
    call: &["call *"],
    frame: &[
        ("push *", Bytes::Fixed(8)),
        ("sub rsp,{n}", Bytes::Immediate),
        ("lea rsp,[rsp-{n}]", Bytes::Immediate),
    ],
    thread_pointer: ("fs:", "*fs:*"),
    slot_load: "mov {r},QWORD PTR fs:[*]",
    memory: &[
        ("*PTR [{r}]*", 1),
        ("*PTR [{r}+{n}]*", 1),
        ("*PTR [{r}-{n}]*", -1),
    ],
    operand_sizes: &[
        ("ZMMWORD PTR", 64),
        ("YMMWORD PTR", 32),
        ("XMMWORD PTR", 16),
        ("QWORD PTR", 8),
        ("DWORD PTR", 4),
        ("WORD PTR", 2),
        ("BYTE PTR", 1),
    ],
    operand_size: 8,
    reads_only: &["cmp", "test", "bt", "push"],
    read_modify_write: &[
        "inc", "dec", "add", "sub", "adc", "sbb", "and", "or", "xor", "not", "neg", "shl", "shr",
        "sar", "rol", "ror", "bts", "btr", "btc", "xadd", "cmpxchg", "xchg",
    ],
    locked: &["lock *", "xchg *PTR *"],
    register: x86_64_register,
    fetch_line: 64,
    cache_line: 64,
    trampoline_alignment: Some(64),
    bind_first_alignment: Some(1024),
    page: 4096,
    trampolines: &[
        Trampoline {
            symbol: "bench_bound",
            cold: "callgate::boundary::slow::call_cold",
            instructions: 13,
            frame_bytes: 0,
            lines: 1,
            why: "the offset's load, test and branch; the slot's load; `serves` and `is_idle`, \
                  a compare and a branch each; the 16-byte store that leaves; `x + 1`; ret",
        },
        Trampoline {
            symbol: "bench_local",
            cold: "callgate::boundary::slow::call_local_cold",
            instructions: 18,
            frame_bytes: 0,
            lines: 1,
            why: "bound's, and the key's load, its compare with the remembered one and branch, \
                  the value's load, the body's increment of it",
        },
        Trampoline {
            symbol: "bench_per_call",
            cold: "callgate::boundary::slow::call_cold",
            instructions: 17,
            frame_bytes: 24,
            lines: 1,
            why: "bound's, and a frame (push, sub; add, pop): its per-call path needs one (the \
                  anchor, `release`'s call), and the compiler sets it up at the entry",
        },
        Trampoline {
            symbol: "bench_user_data",
            cold: "callgate::boundary::slow::call_cold",
            instructions: 32,
            frame_bytes: 56,
            lines: 2,
            why: "the body reads through C's pointer, so the call's records stay: a frame for \
                  the anchor, the token and the anchor's address stored; the pointer's checks",
        },
    ],
    regression: Regression {
        what: "the portable slot (`thread_local!`, read through `__tls_get_addr`)",
        rustflags: "--cfg callgate_portable_tls",
        target_dir: "portable-tls",
        breaks: &[Rule::Call, Rule::ThreadPointer],
    },
}];

/// The 64-bit register `name` is part of.
fn x86_64_register(name: &str) -> Option<&'static str> {
    const REGISTERS: [&[&str]; 16] = [
        &["rax", "eax", "ax", "al", "ah"],
        &["rbx", "ebx", "bx", "bl", "bh"],
        &["rcx", "ecx", "cx", "cl", "ch"],
        &["rdx", "edx", "dx", "dl", "dh"],
        &["rsi", "esi", "si", "sil"],
        &["rdi", "edi", "di", "dil"],
        &["rbp", "ebp", "bp", "bpl"],
        &["rsp", "esp", "sp", "spl"],
        &["r8", "r8d", "r8w", "r8b"],
        &["r9", "r9d", "r9w", "r9b"],
        &["r10", "r10d", "r10w", "r10b"],
        &["r11", "r11d", "r11w", "r11b"],
        &["r12", "r12d", "r12w", "r12b"],
        &["r13", "r13d", "r13w", "r13b"],
        &["r14", "r14d", "r14w", "r14b"],
        &["r15", "r15d", "r15w", "r15b"],
    ];
    REGISTERS
        .iter()
        .find(|names| names.contains(&name))
        .map(|names| names[0])
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
    for target in TARGETS {
        let Some(report) = guard(target, None) else {
            continue;
        };
        assert!(report.violations.is_empty(), "\n{report}");
        eprintln!("{report}");
    }
}

/// The regression's build breaks the rules it must break on every
/// trampoline: the guard would catch a change that made the fast path
/// read the slot so.
#[test]
fn a_regressed_build_breaks_them() {
    for target in TARGETS {
        let regression = &target.regression;
        let Some(report) = guard(target, Some(regression)) else {
            continue;
        };
        for trampoline in target.trampolines {
            for rule in regression.breaks {
                assert!(
                    report.broke(trampoline.symbol, *rule),
                    "with {}, {} should break {rule:?}\n{report}",
                    regression.what,
                    trampoline.symbol
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
