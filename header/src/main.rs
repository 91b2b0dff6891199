//! `callgate-header`: writes the C header of a library's callbacks and
//! types, from the declarations `#[c_callback]`, the derives and
//! `export_error_api!` recorded in the built library.
//!
//! ```text
//! callgate-header target/debug/libfoo.so -o include/foo.h
//! ```
//!
//! `cargo callgate` (the `cargo-callgate` binary of this package) builds
//! the library first, and installs it.

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use cli::HeaderArgs;

fn usage() -> String {
    format!(
        "\
usage: callgate-header LIBRARY... [-o FILE] [--check] [HEADER OPTIONS]
       callgate-header --version

Writes the C header declaring the callbacks and defining the types recorded
in LIBRARY (a cdylib, staticlib, rlib or object file built with callgate;
several are merged).

  -o, --output FILE   write to FILE instead of standard output
  --check             do not write: exit 1 if FILE differs from the header
{}",
        cli::HEADER_OPTIONS
    )
}

#[derive(Debug, Default)]
struct Args {
    libraries: Vec<PathBuf>,
    output: Option<PathBuf>,
    header: HeaderArgs,
    check: bool,
    help: bool,
    version: bool,
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
        println!("{}", usage());
        return Ok(ExitCode::SUCCESS);
    }
    if args.version {
        println!("{}", cli::version("callgate-header"));
        return Ok(ExitCode::SUCCESS);
    }
    let name_from = args.output.as_deref().unwrap_or(&args.libraries[0]);
    let options = args.header.options(name_from)?;
    let header = cli::header(&args.libraries, &options)?;
    match (&args.output, args.check) {
        (None, false) => print!("{header}"),
        (Some(output), false) => std::fs::write(output, &header)
            .map_err(|error| format!("cannot write {}: {error}", output.display()))?,
        (Some(output), true) => {
            if !cli::check(
                &header,
                output,
                "regenerate it (the same command without --check)",
            ) {
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
        if parsed
            .header
            .take(&arg, &mut args)
            .map_err(|error| format!("{error}\n\n{}", usage()))?
        {
            continue;
        }
        match arg.as_str() {
            "-h" | "--help" => parsed.help = true,
            "-V" | "--version" => parsed.version = true,
            "-o" | "--output" => {
                let value = args
                    .next()
                    .ok_or_else(|| format!("{arg} needs a value\n\n{}", usage()))?;
                parsed.output = Some(value.into());
            }
            "--check" => parsed.check = true,
            flag if flag.starts_with('-') => {
                return Err(format!("unknown option `{flag}`\n\n{}", usage()));
            }
            library => parsed.libraries.push(library.into()),
        }
    }
    if parsed.libraries.is_empty() && !parsed.help && !parsed.version {
        return Err(format!("no library given\n\n{}", usage()));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Result<Args, String> {
        parse_args(words.iter().map(|word| (*word).to_owned()))
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
        assert_eq!(parsed.header.defined, ["T", "U"]);
        assert!(parsed.check && !parsed.help);

        assert!(args(&[]).unwrap_err().starts_with("no library given"));
        assert!(args(&["--help"]).is_ok_and(|parsed| parsed.help));
        assert!(args(&["--version"]).is_ok_and(|parsed| parsed.version));
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
