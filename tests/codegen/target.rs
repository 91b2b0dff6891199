//! What the guard knows of a target: how its objdump writes the
//! instructions the rules look for, and what each trampoline may hold.
//!
//! Instructions are matched as objdump prints them, whitespace collapsed,
//! prefixes and comments left out, against patterns: `*` stands for any
//! text, `{n}` for a number (`0x10`, `16`, `-16`) and `{r}` for a name
//! (a register), which the match captures.

/// One target's entry of the guard's table (`TARGETS` in `targets.rs`).
pub struct Target {
    /// The Rust target the fixture is built for.
    pub triple: &'static str,
    /// The objdump that reads its code, and its arguments besides
    /// `-d -t -C --no-show-raw-insn` (the syntax).
    pub objdump: &'static str,
    pub objdump_args: &'static [&'static str],
    /// The linker cargo needs for a cross build, if it does.
    pub linker: Option<&'static str>,
    /// The fixture's target directory under the workspace's: that of the
    /// matrix's row that builds for this target (empty: the workspace's).
    pub target_dir: &'static str,
    /// Where objdump's comment on an instruction starts.
    pub comment: &'static str,
    /// Words objdump prints before a mnemonic (x86's `data16`, `rex.W`).
    pub prefixes: &'static [&'static str],
    /// A return, an unconditional jump, a conditional branch and a call.
    /// An instruction is the first of these it matches, in this order.
    pub ret: &'static [&'static str],
    pub jump: &'static [&'static str],
    pub branch: &'static [&'static str],
    pub call: &'static [&'static str],
    /// The instructions that set up a frame, and the bytes each reserves.
    pub frame: &'static [(&'static str, Bytes)],
    /// How the table names an access relative to the thread pointer, and
    /// the pattern of one (where it is a read of the thread pointer into a
    /// register, aarch64's `mrs`, the pattern's `{r}` is that register).
    pub thread_pointer: (&'static str, &'static str),
    /// The fast path's load of the slot; its first `{r}` is the register it
    /// loads the slot's value (the context's address) into. Either the
    /// thread-pointer access itself (x86's `fs:`), or a later load whose
    /// second `{r}`, its base, holds the thread pointer read (aarch64).
    pub slot_load: &'static str,
    /// Memory operands based on a register `{r}` at a displacement `{n}`,
    /// each with the displacement's sign.
    pub memory: &'static [(&'static str, i64)],
    /// The size a memory operand's text gives it (the first that
    /// appears), else `operand_size`.
    pub operand_sizes: &'static [(&'static str, u64)],
    pub operand_size: u64,
    /// Mnemonics that only read their first operand (others write it),
    /// and those that read and write it.
    pub reads_only: &'static [&'static str],
    pub read_modify_write: &'static [&'static str],
    /// An atomic read-modify-write (a locked instruction), as printed.
    pub locked: &'static [&'static str],
    /// The register a register name is part of (x86's `ecx` of `rcx`).
    pub register: fn(&str) -> Option<&'static str>,
    /// The instruction-fetch line and the cache line, in bytes.
    pub fetch_line: u64,
    pub cache_line: u64,
    /// Where the runtime aligns the trampolines (`align_to_fetch_line`)
    /// and `bind_first` (`align_function::<10>`), if it does; and the
    /// page `bind_first` must not straddle.
    pub trampoline_alignment: Option<u64>,
    pub bind_first_alignment: Option<u64>,
    pub page: u64,
    pub trampolines: &'static [Trampoline],
    pub regression: Regression,
}

/// The bytes a frame instruction reserves.
#[derive(Clone, Copy)]
pub enum Bytes {
    Fixed(u64),
    /// The instruction's `{n}`.
    Immediate,
}

/// A trampoline of the fixture and its bounds (today's figures).
pub struct Trampoline {
    pub symbol: &'static str,
    /// Where the trampoline is no symbol of its own (a closure's C
    /// function, one instance of a generic among others of its name): the
    /// fixture's function that loads its address to hand it to C.
    pub via: Option<&'static str>,
    /// The out-of-line function it sends every other call to, from one
    /// place.
    pub cold: &'static str,
    pub instructions: usize,
    pub frame_bytes: u64,
    pub lines: usize,
    /// The locked instructions its straight line may hold (a closure
    /// call's announcement or turn), and whether the first must come
    /// before the line's first store to the context's first cache line,
    /// where the call's records are (a `Closure::new` turn is taken before
    /// the call starts).
    pub locked: usize,
    pub locked_first: bool,
    /// The context bytes it may touch, and how many read-modify-writes of
    /// them it may make (a `Closure::new` call's note of its turn).
    pub context_bytes: i64,
    pub context_writes: usize,
    /// Why its straight line holds that many instructions (and a frame, or
    /// more than one line, or the above).
    pub why: &'static str,
}

impl Trampoline {
    /// How reports name it: its symbol, and where it is found.
    pub fn name(&self) -> String {
        match self.via {
            None => self.symbol.to_owned(),
            Some(via) => format!("{} ({via}'s)", self.symbol),
        }
    }
}

/// A callback's bounds besides its own figures: its symbol, no lock, the
/// context's first line, `call_cold`.
pub const CALLBACK: Trampoline = Trampoline {
    symbol: "",
    via: None,
    cold: "callgate::boundary::slow::call_cold",
    instructions: 0,
    frame_bytes: 0,
    lines: 1,
    locked: 0,
    locked_first: false,
    context_bytes: 64,
    context_writes: 0,
    why: "",
};

/// A build the guard must reject: the rules each trampoline then breaks.
pub struct Regression {
    /// What it is, for messages.
    pub what: &'static str,
    pub rustflags: &'static str,
    /// Its target directory, under the workspace's: that of the matrix's
    /// row that builds the same way, whose dependencies it shares (or one
    /// of its own).
    pub target_dir: &'static str,
    pub breaks: &'static [crate::rules::Rule],
}

/// `text` matched against `pattern` (module docs): the captures, or
/// `None`.
pub fn matches<'t>(pattern: &str, text: &'t str) -> Option<Vec<&'t str>> {
    let mut captures = Vec::new();
    matches_from(pattern, text, &mut captures).then_some(captures)
}

fn matches_from<'t>(pattern: &str, text: &'t str, captures: &mut Vec<&'t str>) -> bool {
    let start = captures.len();
    let mut attempt = |rest: &str, at: usize, captured: Option<&'t str>| {
        captures.extend(captured);
        if matches_from(rest, &text[at..], captures) {
            return true;
        }
        captures.truncate(start);
        false
    };
    if let Some(rest) = pattern.strip_prefix('*') {
        return (0..=text.len())
            .filter(|&at| text.is_char_boundary(at))
            .any(|at| attempt(rest, at, None));
    }
    // The characters a `{n}` and a `{r}` match.
    type Class = fn(char) -> bool;
    let classes: [(&str, Class); 2] = [
        ("{n}", |c| c.is_ascii_hexdigit() || c == 'x' || c == '-'),
        ("{r}", |c| c.is_ascii_alphanumeric() || c == '.' || c == '_'),
    ];
    for (token, class) in classes {
        if let Some(rest) = pattern.strip_prefix(token) {
            let end = text.find(|c| !class(c)).unwrap_or(text.len());
            return (1..=end)
                .rev()
                .any(|at| attempt(rest, at, Some(&text[..at])));
        }
    }
    match (pattern.chars().next(), text.chars().next()) {
        (None, None) => true,
        (Some(p), Some(t)) if p == t => {
            matches_from(&pattern[p.len_utf8()..], &text[t.len_utf8()..], captures)
        }
        _ => false,
    }
}

/// A captured `{n}`: `0x` hexadecimal or decimal, maybe negative.
pub fn number(text: &str) -> Option<i64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(digits) => (true, digits),
        None => (false, text),
    };
    let value = match digits.strip_prefix("0x") {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse().ok()?,
    };
    Some(if negative { -value } else { value })
}

/// Whether `text` matches any of `patterns`.
pub fn any(patterns: &[&str], text: &str) -> bool {
    patterns
        .iter()
        .any(|pattern| matches(pattern, text).is_some())
}
