//! The guard's table: every target it reads, how its objdump writes the
//! instructions the rules look for, and what each trampoline may hold.

use crate::rules::Rule;
use crate::target::{Bytes, CALLBACK, Regression, Target, Trampoline};

/// The targets the guard reads, with every trampoline's bounds.
pub static TARGETS: &[Target] = &[
    Target {
        triple: "x86_64-unknown-linux-gnu",
        objdump: "objdump",
        objdump_args: &["-M", "intel"],
        linker: None,
        target_dir: "",
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
            "inc", "dec", "add", "sub", "adc", "sbb", "and", "or", "xor", "not", "neg", "shl",
            "shr", "sar", "rol", "ror", "bts", "btr", "btc", "xadd", "cmpxchg", "xchg",
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
                ..CALLBACK
            },
            Trampoline {
                symbol: "bench_local",
                cold: "callgate::boundary::slow::call_local_cold",
                instructions: 18,
                frame_bytes: 0,
                lines: 1,
                why: "bound's, and the key's load, its compare with the remembered one and branch, \
                  the value's load, the body's increment of it",
                ..CALLBACK
            },
            Trampoline {
                symbol: "bench_per_call",
                cold: "callgate::boundary::slow::call_cold",
                instructions: 17,
                frame_bytes: 24,
                lines: 1,
                why: "bound's, and a frame (push, sub; add, pop): its per-call path needs one (the \
                  anchor, `release`'s call), and the compiler sets it up at the entry",
                ..CALLBACK
            },
            Trampoline {
                symbol: "bench_user_data",
                cold: "callgate::boundary::slow::call_cold",
                instructions: 32,
                frame_bytes: 56,
                lines: 2,
                why: "the body reads through C's pointer, so the call's records stay: a frame for \
                  the anchor, the token and the anchor's address stored; the pointer's checks",
                ..CALLBACK
            },
            Trampoline {
                symbol: "callgate::closure::call::data_first_1",
                via: Some("bench_closure"),
                instructions: 52,
                frame_bytes: 88,
                lines: 4,
                locked: 2,
                locked_first: true,
                context_bytes: 256,
                context_writes: 2,
                why: "a `Closure::new` call (`run_turn`): the bound path's, then the turn taken \
                  with a compare-and-swap before the call's records and handed on with a swap \
                  after, and the context's note of the turn (an increment, then a decrement, \
                  in its fourth line) around them; the body's call mark written into the \
                  closure; a frame for the registers kept across the call and the slow path's \
                  arguments",
                ..CALLBACK
            },
        ],
        regression: Regression {
            what: "the portable slot (`thread_local!`, read through `__tls_get_addr`)",
            rustflags: "--cfg callgate_portable_tls",
            target_dir: "portable-tls",
            breaks: &[Rule::Call, Rule::ThreadPointer],
        },
    },
    Target {
        triple: "aarch64-unknown-linux-gnu",
        objdump: "aarch64-linux-gnu-objdump",
        objdump_args: &[],
        linker: Some("aarch64-linux-gnu-gcc"),
        target_dir: "aarch64",
        comment: "//",
        prefixes: &[],
        ret: &["ret", "ret *", "retaa", "retab"],
        jump: &["b *", "br *", "braa *", "brab *", "braaz *", "brabz *"],
        branch: &["b.* *", "cbz *", "cbnz *", "tbz *", "tbnz *"],
        call: &[
            "bl *", "blr *", "blraa *", "blrab *", "blraaz *", "blrabz *",
        ],
        frame: &[
            ("sub sp, sp, #{n}", Bytes::Immediate),
            ("stp *, [sp, #-{n}]!", Bytes::Immediate),
            ("str *, [sp, #-{n}]!", Bytes::Immediate),
        ],
        thread_pointer: ("tpidr_el0", "mrs {r}, tpidr_el0"),
        slot_load: "ldr {r}, [{r}, {r}]",
        memory: &[("*[{r}]*", 1), ("*[{r}, #{n}]*", 1)],
        operand_sizes: &[
            ("stp q", 32),
            ("ldp q", 32),
            ("stp x", 16),
            ("ldp x", 16),
            ("stp d", 16),
            ("ldp d", 16),
            ("ldr q", 16),
            ("str q", 16),
            ("ldur q", 16),
            ("stur q", 16),
            ("stp w", 8),
            ("ldp w", 8),
            ("ldrsw", 4),
            ("ldr w", 4),
            ("str w", 4),
            ("ldur w", 4),
            ("stur w", 4),
            ("ldar w", 4),
            ("stlr w", 4),
            ("ldr s", 4),
            ("str s", 4),
            ("ldrh", 2),
            ("strh", 2),
            ("ldurh", 2),
            ("sturh", 2),
            ("ldrsh", 2),
            ("ldrb", 1),
            ("strb", 1),
            ("ldurb", 1),
            ("sturb", 1),
            ("ldrsb", 1),
        ],
        operand_size: 8,
        reads_only: &[
            "cmp", "cmn", "tst", "ccmp", "ccmn", "str", "stp", "strb", "strh", "stur", "sturb",
            "sturh", "stlr", "stnp", "cbz", "cbnz", "tbz", "tbnz", "prfm",
        ],
        // No instruction of the base set reads, modifies and writes
        // memory: a count is a load, an add and a store, which only the
        // instruction bound catches.
        read_modify_write: &[],
        locked: &[
            "ldxr* *",
            "ldaxr* *",
            "ldxp *",
            "ldaxp *",
            "stxr* *",
            "stlxr* *",
            "stxp *",
            "stlxp *",
            "cas* *",
            "swp* *",
            "ldadd* *",
            "ldclr* *",
            "ldeor* *",
            "ldset* *",
            "ldsmax* *",
            "ldsmin* *",
            "ldumax* *",
            "ldumin* *",
            "stadd* *",
            "stclr* *",
            "steor* *",
            "stset* *",
            "stsmax* *",
            "stsmin* *",
            "stumax* *",
            "stumin* *",
        ],
        register: aarch64_register,
        fetch_line: 64,
        cache_line: 64,
        trampoline_alignment: Some(64),
        bind_first_alignment: Some(1024),
        page: 4096,
        trampolines: &[
            Trampoline {
                symbol: "bench_bound",
                cold: "callgate::boundary::slow::call_cold",
                instructions: 14,
                frame_bytes: 0,
                lines: 1,
                why: "the offset's address (adrp, add), its acquire load and branch (ldar, cbz); the thread \
                      pointer and the slot's load (mrs, ldr); `serves` and `is_idle`, a compare \
                      and a branch each; the 16-byte store that leaves; `x + 1`, and `x` moved \
                      out of the cold call's way; ret",
                ..CALLBACK
            },
            Trampoline {
                symbol: "bench_local",
                cold: "callgate::boundary::slow::call_local_cold",
                instructions: 23,
                frame_bytes: 0,
                lines: 2,
                why: "bound's, and the key's load through the GOT (adrp, ldr), the remembered key's load, \
                      compare and branch, the value's address and load, the body's increment (ldr, \
                      add, str): 92 bytes of 4-byte instructions, two lines",
                ..CALLBACK
            },
            Trampoline {
                symbol: "bench_per_call",
                cold: "callgate::boundary::slow::call_cold",
                instructions: 14,
                frame_bytes: 0,
                lines: 1,
                why: "bound's; its per-call path needs a frame (the anchor, `release`'s call), which \
                      the compiler sets up on that path only",
                ..CALLBACK
            },
            Trampoline {
                symbol: "bench_user_data",
                cold: "callgate::boundary::slow::call_cold",
                instructions: 33,
                frame_bytes: 80,
                lines: 3,
                why: "as on x86-64, the body reads through C's pointer, so the call's records stay: a \
                      frame for the anchor and the registers kept across the cold call (sub, stp, \
                      str, stp, add, and their undoing), the token and the anchor's address \
                      stored; the pointer's checks",
                ..CALLBACK
            },
        ],
        regression: Regression {
            what: "the portable slot (`thread_local!`, read through the TLS descriptor)",
            rustflags: "--cfg callgate_portable_tls",
            target_dir: "aarch64/portable-tls",
            breaks: &[Rule::Call, Rule::Instructions],
        },
    },
];

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

/// The 64-bit register `name` (`x0`, `w0`) is part of; the stack pointer.
fn aarch64_register(name: &str) -> Option<&'static str> {
    const REGISTERS: [&str; 31] = [
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
        "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
        "x27", "x28", "x29", "x30",
    ];
    if name == "sp" || name == "wsp" {
        return Some("sp");
    }
    let number = name.strip_prefix(['x', 'w'])?;
    if number.starts_with('0') && number.len() > 1 {
        return None;
    }
    REGISTERS.get(number.parse::<usize>().ok()?).copied()
}
