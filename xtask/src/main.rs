//! `cargo xtask test`: callgate's whole test suite, as one matrix of rows.
//!
//! Each row of [`ROWS`] (declared in `matrix.rs`) is one build of the library and the tests run
//! against it: what it builds, what it guards, what it needs, and its
//! commands. A row whose needs are missing prints one `SKIPPED` line and
//! the run goes on; nothing is installed. The rows with builds of their
//! own ([`BESIDE`]) run beside the others on two cores or more. The run
//! ends with a table of the rows. `.ci/run` installs what the rows need
//! first, and passes `--require-all` so that a skipped row fails CI.
//!
//! ```text
//! cargo xtask test [--full] [--only ROW]... [--list] [--require-all] [--verbose]
//! cargo xtask --help
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

mod matrix;

use matrix::{BESIDE, Need, ROWS, RUST_VERSION, Row, expand};

/// What a need lacks on this machine, as "X (install: …)"; `None` when met.
fn missing(need: Need) -> Option<String> {
    match need {
        Need::Tool(tool, install) => {
            let found = std::env::var_os("PATH").is_some_and(|path| {
                std::env::split_paths(&path).any(|dir| dir.join(tool).is_file())
            });
            (!found).then(|| format!("{tool} (install: {install})"))
        }
        Need::Target(target) => {
            let installed = output("rustup", &["target", "list", "--installed"]);
            (!installed.lines().any(|line| line == target))
                .then(|| format!("the Rust target {target} (install: rustup target add {target})"))
        }
        Need::Toolchain(toolchain, components) => {
            let rust_version;
            let toolchain = if toolchain == RUST_VERSION {
                rust_version = std::fs::read_to_string("Cargo.toml")
                    .ok()
                    .and_then(|manifest| {
                        manifest.lines().find_map(|line| {
                            Some(
                                line.strip_prefix("rust-version = ")?
                                    .trim_matches('"')
                                    .to_owned(),
                            )
                        })
                    })
                    .unwrap_or_default();
                rust_version.as_str()
            } else {
                toolchain
            };
            if output("rustup", &["run", toolchain, "rustc", "--version"]).is_empty() {
                return Some(format!(
                    "the {toolchain} toolchain (install: rustup toolchain install {toolchain} --profile minimal{})",
                    components
                        .iter()
                        .fold(String::new(), |list, c| list + " --component " + c)
                ));
            }
            let installed = output(
                "rustup",
                &["component", "list", "--toolchain", toolchain, "--installed"],
            );
            components
                .iter()
                .find(|component| !installed.lines().any(|line| line.starts_with(*component)))
                .map(|component| {
                    format!(
                        "{component} for {toolchain} (install: rustup component add {component} --toolchain {toolchain})"
                    )
                })
        }
        Need::File(file, install) => {
            (!Path::new(file).exists()).then(|| format!("{file} (install: {install})"))
        }
    }
}

/// `program args`'s standard output, empty if it could not run or failed.
fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        .unwrap_or_default()
}

/// How a row went.
enum Outcome {
    Passed,
    Failed,
    Skipped,
}

struct Report {
    name: &'static str,
    outcome: Outcome,
    /// Tests passed, failed and ignored, from libtest's summary lines.
    counts: [u64; 3],
    seconds: f64,
}

/// Adds up libtest's `test result: …` lines of `log`.
fn count(log: &str) -> [u64; 3] {
    let mut counts = [0; 3];
    for line in log.lines().filter(|line| line.starts_with("test result:")) {
        for (index, label) in ["passed", "failed", "ignored"].iter().enumerate() {
            counts[index] += line
                .split(';')
                .filter_map(|part| {
                    part.trim()
                        .trim_start_matches("test result: ok.")
                        .trim()
                        .strip_suffix(label)
                })
                .filter_map(|number| number.trim().rsplit(' ').next()?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    counts
}

struct Options {
    full: bool,
    only: Vec<String>,
    list: bool,
    require_all: bool,
    verbose: bool,
    help: bool,
}

const USAGE: &str =
    "usage: cargo xtask test [--full] [--only ROW]... [--list] [--require-all] [--verbose]\n";

const HELP: &str = "\
Runs callgate's test suite: one row per build of the library (see --list).
A row whose tools are missing prints one SKIPPED line; nothing is installed.

  --only ROW      run this row only (repeatable)
  --list          list the rows: what each builds, guards and needs
  --full          the long stress tests (10 times the threads, forks, levels)
  --require-all   fail if a row was skipped (CI)
  --verbose       show each row's output as it runs (else: target/xtask/ROW.log)
";

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        full: false,
        only: Vec::new(),
        list: false,
        require_all: false,
        verbose: false,
        help: false,
    };
    let mut args = args.iter();
    match args.next().map(String::as_str) {
        Some("test") => {}
        Some("--help" | "-h" | "help") => {
            options.help = true;
            return Ok(options);
        }
        _ => return Err(format!("{USAGE}(cargo xtask --help for more)")),
    }
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--full" => options.full = true,
            "--list" => options.list = true,
            "--require-all" => options.require_all = true,
            "--verbose" => options.verbose = true,
            "--help" | "-h" => options.help = true,
            "--only" => {
                let name = args.next().ok_or("--only needs a row name (see --list)")?;
                if !ROWS.iter().any(|row| row.name == name) {
                    return Err(format!("no row `{name}` (see --list)"));
                }
                options.only.push(name.clone());
            }
            other => {
                return Err(format!(
                    "unknown option `{other}`\n{USAGE}(cargo xtask --help for more)"
                ));
            }
        }
    }
    Ok(options)
}

fn list() {
    for row in ROWS {
        let missing: Vec<String> = row.needs.iter().filter_map(|need| missing(*need)).collect();
        println!("{}: {}", row.name, row.build);
        println!("    guards: {}", row.guards);
        if missing.is_empty() {
            println!("    needs: met");
        } else {
            println!("    needs: {}", missing.join("; "));
        }
    }
}

/// Runs `row`, logging to `logs/<row>.log` (or to the terminal with
/// `verbose`).
fn run(row: &Row, logs: &Path, options: &Options) -> Report {
    let started = Instant::now();
    let missing: Vec<String> = row.needs.iter().filter_map(|need| missing(*need)).collect();
    if !missing.is_empty() {
        let why = format!("needs {}", missing.join("; "));
        println!("SKIPPED {}: {why}", row.name);
        return Report {
            name: row.name,
            outcome: Outcome::Skipped,
            counts: [0; 3],
            seconds: 0.0,
        };
    }
    println!("==> {}: {}", row.name, row.build);
    let log_path = logs.join(format!("{}.log", row.name));
    let mut log = String::new();
    let mut outcome = Outcome::Passed;
    for command in row.commands {
        let command = expand(command);
        let mut shell = Command::new("bash");
        shell.arg("-c").arg(format!("set -euo pipefail; {command}"));
        // Expected panics print their message, not a backtrace.
        shell.env("RUST_BACKTRACE", "0");
        if options.full {
            shell.env("CALLGATE_FULL", "1");
        }
        let _ = writeln!(log, "$ {command}");
        let status = if options.verbose {
            shell.status().map(|status| (status, String::new()))
        } else {
            shell.output().map(|output| {
                let text = String::from_utf8_lossy(&output.stdout)
                    + String::from_utf8_lossy(&output.stderr);
                (output.status, text.into_owned())
            })
        };
        match status {
            Ok((status, text)) => {
                log.push_str(&text);
                if !status.success() {
                    let _ = writeln!(log, "exit: {status}");
                    outcome = Outcome::Failed;
                    break;
                }
            }
            Err(error) => {
                let _ = writeln!(log, "bash: {error}");
                outcome = Outcome::Failed;
                break;
            }
        }
    }
    if let Err(error) = std::fs::write(&log_path, &log) {
        eprintln!("xtask: cannot write {}: {error}", log_path.display());
    }
    if let Outcome::Failed = outcome {
        // libtest's report of the failed tests, or else the log's end.
        let lines: Vec<&str> = log.lines().collect();
        let start = lines
            .iter()
            .position(|line| *line == "failures:")
            .unwrap_or(lines.len().saturating_sub(60));
        let mut block = format!("FAILED {} (from {}):\n", row.name, log_path.display());
        for line in lines.iter().skip(start).take(80) {
            let _ = writeln!(block, "    {line}");
        }
        print!("{block}");
    }
    Report {
        name: row.name,
        outcome,
        counts: count(&log),
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn table(reports: &[Report]) -> String {
    let mut out = String::from(
        "\n| row | result | passed | failed | ignored | seconds |\n|---|---|---|---|---|---|\n",
    );
    for report in reports {
        let result = match &report.outcome {
            Outcome::Passed => "passed".to_owned(),
            Outcome::Failed => "FAILED".to_owned(),
            Outcome::Skipped => "skipped".to_owned(),
        };
        let [passed, failed, ignored] = report.counts;
        let _ = writeln!(
            out,
            "| {} | {result} | {passed} | {failed} | {ignored} | {:.0} |",
            report.name, report.seconds
        );
    }
    let total = |index: usize| {
        reports
            .iter()
            .map(|report| report.counts[index])
            .sum::<u64>()
    };
    let skipped = reports
        .iter()
        .filter(|report| matches!(report.outcome, Outcome::Skipped))
        .count();
    let _ = writeln!(
        out,
        "\nrows: {} passed, {} failed, {skipped} skipped",
        reports
            .iter()
            .filter(|report| matches!(report.outcome, Outcome::Passed))
            .count(),
        reports
            .iter()
            .filter(|report| matches!(report.outcome, Outcome::Failed))
            .count()
    );
    let _ = writeln!(
        out,
        "{} passed, {} failed, {skipped} skipped",
        total(0),
        total(1)
    );
    out
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("xtask: {message}");
            return ExitCode::from(2);
        }
    };
    // The manifest directory `cargo run` names, rather than the one this
    // binary was built in: a copied checkout reuses the build.
    let manifest_dir =
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    let root = PathBuf::from(manifest_dir).join("..");
    if let Err(error) = std::env::set_current_dir(&root) {
        eprintln!("xtask: cannot enter {}: {error}", root.display());
        return ExitCode::FAILURE;
    }
    if options.help {
        print!("{USAGE}\n{HELP}");
        return ExitCode::SUCCESS;
    }
    if options.list {
        list();
        return ExitCode::SUCCESS;
    }
    let logs = PathBuf::from("target/xtask");
    if let Err(error) = std::fs::create_dir_all(&logs) {
        eprintln!("xtask: cannot create {}: {error}", logs.display());
        return ExitCode::FAILURE;
    }
    debug_assert!(
        BESIDE
            .iter()
            .all(|name| ROWS.iter().any(|row| row.name == *name))
    );
    let started = Instant::now();
    let selected = ROWS
        .iter()
        .filter(|row| options.only.is_empty() || options.only.iter().any(|name| name == row.name));
    let lanes = !options.verbose
        && std::thread::available_parallelism().is_ok_and(|cores| cores.get() >= 2);
    let (beside, rest): (Vec<&Row>, Vec<&Row>) =
        selected.partition(|row| lanes && BESIDE.contains(&row.name));
    let mut reports: Vec<Report> = std::thread::scope(|scope| {
        let side = scope.spawn(|| {
            beside
                .iter()
                .map(|row| run(row, &logs, &options))
                .collect::<Vec<_>>()
        });
        let mut reports: Vec<Report> = rest.iter().map(|row| run(row, &logs, &options)).collect();
        reports.extend(side.join().expect("the rows beside the others"));
        reports
    });
    reports.sort_by_key(|report| ROWS.iter().position(|row| row.name == report.name));
    print!("{}", table(&reports));
    println!("in {:.0} s", started.elapsed().as_secs_f64());
    let failed = reports
        .iter()
        .any(|report| matches!(report.outcome, Outcome::Failed));
    let skipped = reports
        .iter()
        .any(|report| matches!(report.outcome, Outcome::Skipped));
    if failed || (options.require_all && skipped) {
        if !failed {
            eprintln!("xtask: --require-all: a row was skipped");
        }
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
