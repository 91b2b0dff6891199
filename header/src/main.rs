//! `callgate-header`: writes the C header of a library's callbacks, from
//! the declarations `#[c_callback]` and `export_error_api!` recorded in the
//! built library.
//!
//! ```text
//! callgate-header target/debug/libfoo.so -o include/foo.h
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use callgate_header::{HeaderOptions, extract, render};

const USAGE: &str = "\
usage: callgate-header LIBRARY... [-o FILE] [--guard NAME] [--prelude FILE] [--defined TYPE]... [--check]

Writes the C header declaring the callbacks recorded in LIBRARY (a cdylib,
staticlib, rlib or object file built with callgate; several are merged).

  -o, --output FILE   write to FILE instead of standard output
  --guard NAME        include guard (default: from FILE or LIBRARY, e.g. FOO_H)
  --prelude FILE      C text to put before the declarations (includes, type definitions)
  --defined TYPE      a Rust type the prelude defines: no forward declaration
  --check             do not write: exit 1 if FILE differs from the header";

#[derive(Debug, Default)]
struct Args {
    libraries: Vec<PathBuf>,
    output: Option<PathBuf>,
    guard: Option<String>,
    prelude: Option<PathBuf>,
    defined: Vec<String>,
    check: bool,
    help: bool,
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("callgate-header: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let args = parse_args(std::env::args().skip(1))?;
    if args.help {
        println!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    let mut bytes = Vec::new();
    for library in &args.libraries {
        let content = std::fs::read(library)
            .map_err(|error| format!("cannot read {}: {error}", library.display()))?;
        bytes.extend(content);
    }
    let declarations = extract(&bytes).map_err(|error| error.to_string())?;
    if declarations.is_empty() {
        return Err(format!(
            "no callback declarations in {}: is it built from a crate that uses #[c_callback] \
             or callgate::export_error_api!?",
            list(&args.libraries)
        ));
    }
    let guard = args.guard.clone().unwrap_or_else(|| {
        let from = args.output.as_deref().unwrap_or(&args.libraries[0]);
        default_guard(from)
    });
    let mut options = HeaderOptions::new(guard);
    if let Some(prelude) = &args.prelude {
        let text = std::fs::read_to_string(prelude)
            .map_err(|error| format!("cannot read {}: {error}", prelude.display()))?;
        options = options.with_prelude(text);
    }
    for name in &args.defined {
        options = options.with_defined_type(name.clone());
    }
    let header = render(&declarations, &options).map_err(|error| error.to_string())?;

    match (&args.output, args.check) {
        (None, false) => print!("{header}"),
        (Some(output), false) => std::fs::write(output, &header)
            .map_err(|error| format!("cannot write {}: {error}", output.display()))?,
        (Some(output), true) => {
            let committed = std::fs::read_to_string(output).unwrap_or_default();
            if committed != header {
                eprintln!(
                    "callgate-header: {} is out of date: regenerate it (the same command \
                     without --check)",
                    output.display()
                );
                return Ok(ExitCode::FAILURE);
            }
        }
        (None, true) => return Err("--check needs -o FILE to compare with".to_owned()),
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args::default();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| {
            args.next()
                .ok_or_else(|| format!("{flag} needs a value\n\n{USAGE}"))
        };
        match arg.as_str() {
            "-h" | "--help" => parsed.help = true,
            "-o" | "--output" => parsed.output = Some(value(&arg)?.into()),
            "--guard" => parsed.guard = Some(value(&arg)?),
            "--prelude" => parsed.prelude = Some(value(&arg)?.into()),
            "--defined" => parsed.defined.push(value(&arg)?),
            "--check" => parsed.check = true,
            flag if flag.starts_with('-') => {
                return Err(format!("unknown option `{flag}`\n\n{USAGE}"));
            }
            library => parsed.libraries.push(library.into()),
        }
    }
    if parsed.libraries.is_empty() && !parsed.help {
        return Err(format!("no library given\n\n{USAGE}"));
    }
    Ok(parsed)
}

/// `include/plugin.h` → `PLUGIN_H`; `target/debug/libfoo.so` → `FOO_H`.
fn default_guard(path: &Path) -> String {
    let stem = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.split('.').next())
        .unwrap_or("callgate");
    let stem = if path.extension().is_some_and(|ext| ext != "h") {
        stem.strip_prefix("lib").unwrap_or(stem)
    } else {
        stem
    };
    format!("{}_H", stem.to_ascii_uppercase())
}

fn list(paths: &[PathBuf]) -> String {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Result<Args, String> {
        parse_args(words.iter().map(|word| (*word).to_owned()))
    }

    #[test]
    fn guards_come_from_file_names() {
        assert_eq!(default_guard(Path::new("include/plugin.h")), "PLUGIN_H");
        assert_eq!(default_guard(Path::new("target/debug/libfoo.so")), "FOO_H");
        assert_eq!(default_guard(Path::new("foo.dll")), "FOO_H");
        assert_eq!(default_guard(Path::new("lib/libbar.so.1")), "BAR_H");
    }

    #[test]
    fn parses_options_and_libraries() {
        let parsed = args(&[
            "liba.so",
            "-o",
            "a.h",
            "--defined",
            "T",
            "libb.a",
            "--check",
            "--defined",
            "U",
        ])
        .expect("valid arguments");
        assert_eq!(
            parsed.libraries,
            [PathBuf::from("liba.so"), PathBuf::from("libb.a")]
        );
        assert_eq!(parsed.output, Some(PathBuf::from("a.h")));
        assert_eq!(parsed.defined, ["T", "U"]);
        assert!(parsed.check && !parsed.help);

        assert!(args(&[]).unwrap_err().starts_with("no library given"));
        assert!(args(&["--help"]).is_ok_and(|parsed| parsed.help));
        assert!(
            args(&["x.so", "--guard"])
                .unwrap_err()
                .starts_with("--guard needs a value")
        );
        assert!(
            args(&["x.so", "--frobnicate"])
                .unwrap_err()
                .starts_with("unknown option")
        );
    }
}
