//! A library's functions and instructions, as the target's objdump prints
//! them (`objdump -d -t -C`: the symbol table, then the code, demangled).

use std::path::Path;
use std::process::Command;

use crate::target::{self, Target};

/// What an instruction does to the flow of control.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Ret,
    Jump,
    Branch,
    Call,
    Other,
}

pub struct Instruction {
    pub address: u64,
    /// Up to the next instruction (1 where that is not known).
    pub length: u64,
    /// As objdump prints it, whitespace collapsed, with its comment.
    pub text: String,
    /// Without prefixes or comment: what the patterns match.
    pub body: String,
    pub kind: Kind,
    /// A direct jump's, branch's or call's destination, and the symbol
    /// objdump names there (without `+0x…`).
    pub destination: Option<u64>,
    pub symbol: Option<String>,
}

pub struct Function {
    pub name: String,
    pub address: u64,
    pub size: u64,
}

impl Function {
    pub fn contains(&self, address: u64) -> bool {
        (self.address..self.address + self.size).contains(&address)
    }
}

pub struct Listing {
    pub functions: Vec<Function>,
    /// In address order.
    pub instructions: Vec<Instruction>,
}

impl Listing {
    /// Runs the target's objdump on `library`.
    pub fn read(target: &Target, library: &Path) -> Result<Listing, String> {
        let output = Command::new(target.objdump)
            .args(["-d", "-t", "-C", "--no-show-raw-insn"])
            .args(target.objdump_args)
            .arg(library)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", target.objdump))?;
        if !output.status.success() {
            return Err(format!(
                "{} {} failed: {}",
                target.objdump,
                library.display(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(Listing::parse(
            target,
            &String::from_utf8_lossy(&output.stdout),
        ))
    }

    pub fn parse(target: &Target, dump: &str) -> Listing {
        let mut functions = Vec::new();
        let mut instructions: Vec<Instruction> = Vec::new();
        for line in dump.lines() {
            if let Some(function) = symbol(line) {
                functions.push(function);
            } else if let Some(instruction) = instruction(target, line) {
                instructions.push(instruction);
            }
        }
        instructions.sort_by_key(|instruction| instruction.address);
        for index in 1..instructions.len() {
            let gap = instructions[index].address - instructions[index - 1].address;
            // No instruction is longer than 15 bytes (x86); a wider gap is
            // the end of a section.
            if (1..=16).contains(&gap) {
                instructions[index - 1].length = gap;
            }
        }
        Listing {
            functions,
            instructions,
        }
    }

    /// The function named `name` (the first, where copies share a name).
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|function| function.name == name)
    }

    /// The instruction at `address`.
    pub fn at(&self, address: u64) -> Option<&Instruction> {
        let index = self
            .instructions
            .binary_search_by_key(&address, |instruction| instruction.address)
            .ok()?;
        Some(&self.instructions[index])
    }

    /// The instructions of `function`.
    pub fn code<'a>(&'a self, function: &'a Function) -> impl Iterator<Item = &'a Instruction> {
        self.instructions
            .iter()
            .filter(|instruction| function.contains(instruction.address))
    }
}

/// A function of the symbol table: `<address> <flags> F <section>\t<size>
/// [.hidden ]<name>`.
fn symbol(line: &str) -> Option<Function> {
    let (left, right) = line.split_once('\t')?;
    if !left.contains(" F ") {
        return None;
    }
    let address = u64::from_str_radix(left.split_whitespace().next()?, 16).ok()?;
    let (size, name) = right.trim().split_once(' ')?;
    let name = name.trim();
    Some(Function {
        name: name.strip_prefix(".hidden ").unwrap_or(name).to_owned(),
        address,
        size: u64::from_str_radix(size, 16).ok()?,
    })
}

/// An instruction line: `<address>:\t<mnemonic> <operands> [<comment>]`.
fn instruction(target: &Target, line: &str) -> Option<Instruction> {
    let (address, text) = line.trim_start().split_once(":\t")?;
    let address = u64::from_str_radix(address, 16).ok()?;
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut body = text
        .split_once(target.comment)
        .map_or(text.as_str(), |(code, _)| code)
        .trim();
    while let Some((word, rest)) = body.split_once(' ') {
        if !target.prefixes.contains(&word) {
            break;
        }
        body = rest;
    }
    let kind = [
        (target.ret, Kind::Ret),
        (target.jump, Kind::Jump),
        (target.branch, Kind::Branch),
        (target.call, Kind::Call),
    ]
    .into_iter()
    .find(|(patterns, _)| target::any(patterns, body))
    .map_or(Kind::Other, |(_, kind)| kind);
    // `<hex> <symbol[+0x…]>` at the end of a direct one.
    let (destination, symbol) = match body.split_once(" <") {
        Some((before, symbol)) if kind != Kind::Other => (
            before
                .rsplit([' ', ','])
                .next()
                .and_then(|hex| u64::from_str_radix(hex, 16).ok()),
            symbol
                .strip_suffix('>')
                .map(|symbol| symbol.split("+0x").next().unwrap_or(symbol).to_owned()),
        ),
        _ => (None, None),
    };
    Some(Instruction {
        address,
        length: 1,
        body: body.to_owned(),
        text,
        kind,
        destination,
        symbol,
    })
}
