//! `cargo callgate`: from a crate built with callgate to a C library, in
//! one command.
//!
//! ```text
//! cargo callgate build [--release]            the library, its header and pkg-config file
//! cargo callgate install --prefix /usr/local  and installed, as cargo-c lays it out
//! cargo callgate check include/foo.h          fails when the committed header is stale
//! ```

#[path = "../../cli.rs"]
mod cli;

mod cargo;
mod install;
mod json;

use std::path::PathBuf;
use std::process::ExitCode;

use cargo::CargoArgs;
use cli::HeaderArgs;
use install::Layout;

fn usage() -> String {
    format!(
        "\
usage: cargo callgate build [OPTIONS]
       cargo callgate install [--prefix DIR] [--destdir DIR] [--debug] [OPTIONS]
       cargo callgate check HEADER [OPTIONS]
       cargo callgate --version

build    builds the package's cdylib and staticlib (`cargo rustc`; the shared
         library with a versioned soname, linked under that name), writes its
         C header NAME.h and its pkg-config file NAME-uninstalled.pc beside them
install  builds in release (unless --debug), then installs under the prefix
         (default /usr/local): lib/ (the library, its soname and links),
         include/NAME/NAME.h and lib/pkgconfig/NAME.pc
check    builds, then exits 1 if HEADER differs from the header it would write

Cargo options: -p/--package NAME, --manifest-path PATH, --release, --profile NAME,
  --target TRIPLE, --target-dir DIR, -F/--features LIST, --all-features,
  --no-default-features, --locked, --offline, --frozen, -j/--jobs N, -q, --verbose
Header options:
{}",
        cli::HEADER_OPTIONS
    )
}

#[derive(Debug, PartialEq, Eq)]
enum Task {
    Build,
    Install,
    Check(PathBuf),
    Help,
    Version,
}

#[derive(Debug)]
struct Args {
    task: Task,
    cargo: CargoArgs,
    header: HeaderArgs,
    prefix: PathBuf,
    destdir: Option<PathBuf>,
    debug: bool,
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(message) => {
            eprintln!("cargo-callgate: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let mut args = parse_args(std::env::args().skip(1))?;
    match &args.task {
        Task::Help => {
            println!("{}", usage());
            return Ok(ExitCode::SUCCESS);
        }
        Task::Version => {
            println!("{}", cli::version("cargo-callgate"));
            return Ok(ExitCode::SUCCESS);
        }
        Task::Install if !args.debug && args.cargo.profile.is_none() => args.cargo.release = true,
        _ => {}
    }
    let package = cargo::package(&args.cargo)?;
    let built = cargo::build(&args.cargo, package)?;
    let name = built.package.lib_name.clone();
    let header_path = match &args.task {
        Task::Check(header) => header.clone(),
        _ => built.out_dir().join(format!("{name}.h")),
    };
    let options = args.header.options(&header_path)?;
    let header = cli::header(&[built.library().to_path_buf()], &options)?;
    match &args.task {
        Task::Build => {
            let out = built.out_dir();
            let pc = install::pkg_config(&built, out, "${prefix}", "${prefix}");
            let mut written = vec![
                install::write(&header_path, &header)?,
                install::write(&out.join(format!("{name}-uninstalled.pc")), &pc)?,
            ];
            written.extend(install::soname_link(&built)?);
            for path in written {
                eprintln!("     Written {}", path.display());
            }
        }
        Task::Install => {
            let layout = Layout {
                prefix: args.prefix.clone(),
                destdir: args.destdir.clone(),
            };
            for path in install::install(&built, &header, &layout)? {
                eprintln!("   Installed {}", path.display());
            }
        }
        Task::Check(path) => {
            let regenerate = format!(
                "regenerate it with `callgate-header {} -o {}` (and the same header options)",
                built.library().display(),
                path.display()
            );
            if !cli::check(&header, path, &regenerate) {
                return Ok(ExitCode::FAILURE);
            }
            eprintln!("  Up to date {}", path.display());
        }
        Task::Help | Task::Version => unreachable!("handled above"),
    }
    Ok(ExitCode::SUCCESS)
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    // Run as `cargo callgate …`, the subcommand's name comes first.
    let mut args = args.peekable();
    if args.peek().is_some_and(|first| first == "callgate") {
        args.next();
    }
    let mut task = None;
    let mut parsed = Args {
        task: Task::Help,
        cargo: CargoArgs::default(),
        header: HeaderArgs::default(),
        prefix: PathBuf::from("/usr/local"),
        destdir: None,
        debug: false,
    };
    let fail = |message: String| format!("{message}\n\n{}", usage());
    while let Some(arg) = args.next() {
        if parsed.cargo.take(&arg, &mut args).map_err(fail)?
            || parsed.header.take(&arg, &mut args).map_err(fail)?
        {
            continue;
        }
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| fail(format!("{name} needs a value")))
        };
        match arg.as_str() {
            "-h" | "--help" => task = Some(Task::Help),
            "-V" | "--version" => task = Some(Task::Version),
            "--prefix" => parsed.prefix = value(&arg)?.into(),
            "--destdir" => parsed.destdir = Some(value(&arg)?.into()),
            "--debug" => parsed.debug = true,
            "build" if task.is_none() => task = Some(Task::Build),
            "install" if task.is_none() => task = Some(Task::Install),
            "check" if task.is_none() => task = Some(Task::Check(PathBuf::new())),
            other if other.starts_with('-') => {
                return Err(fail(format!("unknown option `{other}`")));
            }
            header if task == Some(Task::Check(PathBuf::new())) => {
                task = Some(Task::Check(header.into()));
            }
            other => return Err(fail(format!("unexpected `{other}`"))),
        }
    }
    parsed.task = match task {
        None => return Err(fail("no command given".to_owned())),
        Some(Task::Check(header)) if header.as_os_str().is_empty() => {
            return Err(fail(
                "check needs the header to compare: `check HEADER`".to_owned(),
            ));
        }
        Some(task) => task,
    };
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Result<Args, String> {
        parse_args(words.iter().map(|word| (*word).to_owned()))
    }

    #[test]
    fn parses_the_commands() {
        let install = args(&[
            "callgate",
            "install",
            "--prefix",
            "/opt/x",
            "-p",
            "shapes",
            "--features",
            "a",
            "--cxx-owners",
        ])
        .unwrap();
        assert_eq!(install.task, Task::Install);
        assert_eq!(install.prefix, PathBuf::from("/opt/x"));
        assert_eq!(install.cargo.package.as_deref(), Some("shapes"));
        assert_eq!(install.cargo.forwarded, ["--features", "a"]);
        assert!(install.header.cxx_owners);

        let check = args(&["check", "--release", "include/shapes.h"]).unwrap();
        assert_eq!(check.task, Task::Check(PathBuf::from("include/shapes.h")));
        assert!(check.cargo.release);

        assert_eq!(
            args(&["callgate", "--version"]).unwrap().task,
            Task::Version
        );
        assert_eq!(args(&["build", "--version"]).unwrap().task, Task::Version);
        assert!(args(&[]).unwrap_err().starts_with("no command given"));
        assert!(
            args(&["build", "--bogus"])
                .unwrap_err()
                .starts_with("unknown option")
        );
        assert!(
            args(&["check"])
                .unwrap_err()
                .starts_with("check needs the header")
        );
    }
}
