//! Compile-time behaviour of `#[c_callback]` and `#[callgate::init]`: every
//! rejected form has its own message at the offending tokens, and every option
//! and mapping compiles. Bless changed `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p callgate-dev --test ui` on the pinned
//! toolchain.

use std::fs;
use std::path::{Path, PathBuf};

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}

/// The public items whose bound rustc may show in the runtime's source: a
/// user who calls `Closure::new` with a closure C cannot call is pointed at
/// its signature, as for any library function. Everything the macros
/// generate is checked at the user's tokens instead.
const PUBLIC_BOUNDS: [&str; 2] = [
    "note: required by a bound in `Closure::<S>::new`",
    "note: required by a bound in `FnMutBody`",
];

/// No expected error names the runtime's internals: no `__private` path,
/// and no line of the runtime's source but the signature of a public item
/// the case calls itself.
#[test]
fn errors_speak_of_the_users_code() {
    let mut files = Vec::new();
    stderr_files(Path::new("tests/ui"), &mut files);
    files.sort();
    let (mut leaks, mut public_bounds) = (Vec::new(), 0);
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            let public_bound = line.contains("runtime/src")
                && index > 0
                && PUBLIC_BOUNDS.contains(&lines[index - 1]);
            public_bounds += usize::from(public_bound);
            if line.contains("__private") || line.contains("runtime/src") && !public_bound {
                leaks.push(format!("{}:{}: {line}", file.display(), index + 1));
            }
        }
    }
    assert!(!files.is_empty(), "no .stderr files under tests/ui");
    assert!(
        leaks.is_empty(),
        "{} lines of the {} .stderr files under tests/ui name callgate's internals:\n{}",
        leaks.len(),
        files.len(),
        leaks.join("\n")
    );
    println!(
        "{} .stderr files under tests/ui: none names `__private`; the runtime's source \
         appears only in {public_bounds} notes on a public item's bound",
        files.len()
    );
}

fn stderr_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            stderr_files(&path, files);
        } else if path.extension().is_some_and(|ext| ext == "stderr") {
            files.push(path);
        }
    }
}
