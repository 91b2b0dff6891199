//! `cargo xtask test`: callgate's whole test suite, as one matrix of rows.
//!
//! Each row of [`ROWS`] is one build of the library and the tests run
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

/// What a row needs from the machine.
#[derive(Clone, Copy)]
enum Need {
    /// A program on `PATH`, and how to install it.
    Tool(&'static str, &'static str),
    /// A Rust target of the pinned toolchain.
    Target(&'static str),
    /// A rustup toolchain with these components ([`RUST_VERSION`] for the
    /// workspace's `rust-version`).
    Toolchain(&'static str, &'static [&'static str]),
    /// A file (a cross C library's loader, say), and how to install it.
    File(&'static str, &'static str),
}

struct Row {
    name: &'static str,
    /// What the row builds.
    build: &'static str,
    /// What the row guards.
    guards: &'static str,
    needs: &'static [Need],
    /// Shell commands, run in order from the workspace root with `bash`.
    /// `{hosts:SET}` stands for the C-host tests of that set (see
    /// [`HOST_SETS`]).
    commands: &'static [&'static str],
}

const CC: Need = Need::Tool("cc", "apt-get install build-essential");
const CXX: Need = Need::Tool("c++", "apt-get install g++");
/// The toolchain name that stands for the workspace's `rust-version`,
/// read from `Cargo.toml` (as `scripts/msrv.sh` reads it).
const RUST_VERSION: &str = "rust-version";

const NIGHTLY_SRC: Need = Need::Toolchain("nightly", &["rust-src"]);

/// The C-host tests (`tests/hosts`: each runs C programs against the
/// fixture library) that each kind of build runs.
const HOST_SETS: &[(&str, &str)] = &[
    // The release fixture and plugins.
    (
        "release",
        "abandon bad_input churn data depth dlclose fork init_background plugins signals teardown unwind",
    ),
    // Other builds of the fixture: all but the plugin hosts, which build
    // their own plugins, and the header's, which reads the debug build.
    (
        "builds",
        "abandon bad_input callbacks churn data depth dlclose fork init_background signals teardown unwind values",
    ),
    // The edition 2021 build: as `builds`, but for the dlclose and unwind
    // hosts, which look for the library's own name.
    (
        "edition",
        "abandon bad_input callbacks churn data depth fork init_background signals teardown values",
    ),
    // The hosts that `dlopen` the fixture, but for the dlclose and unwind
    // hosts: the dynamic TLS pass.
    (
        "dlopen",
        "abandon bad_input churn depth fork init_background signals teardown",
    ),
    // The portable slot.
    (
        "portable",
        "abandon bad_input churn data depth dlclose fork init_background signals teardown",
    ),
    // The programs that link the fixture.
    ("linked", "callbacks data values"),
];

/// Rows whose builds and files are their own (a target directory each):
/// on a machine with two cores or more they run one after another beside
/// the other rows, which leave a core idle while they link, run a test
/// program or wait for one.
const BESIDE: &[&str] = &["loom", "miri", "msrv", "package", "portable-tls", "windows"];

/// The matrix. The first row is what `cargo test --workspace` runs.
const ROWS: &[Row] = &[
    Row {
        name: "debug",
        build: "the workspace, debug",
        guards: "unit, integration, compile-fail and doc tests; the guide's examples and tutorial; the C hosts against the debug fixture; the fast paths' machine code in the release benchmark fixture (tests/codegen); a C library installed by `cargo callgate`",
        needs: &[CC, CXX],
        commands: &["cargo test --workspace"],
    },
    Row {
        name: "release",
        build: "the fixture and plugins, release",
        guards: "what users ship: the compiler drops landing pads and frames the debug build keeps",
        needs: &[CC, CXX],
        commands: &[
            "CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:release}",
        ],
    },
    Row {
        name: "dynamic-tls",
        build: "the release fixture, its TLS block in dynamic TLS",
        guards: "the descriptor-call fast path of a library loaded after others filled glibc's static TLS reserve",
        needs: &[CC],
        commands: &[
            "CALLGATE_TEST_DYNAMIC_TLS=1 CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:dlopen}",
        ],
    },
    Row {
        name: "edition-2021",
        build: "the fixture's sources as an edition 2021 crate, release",
        guards: "the attributes' code in the edition most users compile it in (temporaries drop at other points)",
        needs: &[CC],
        commands: &[
            "scripts/edition-2021.sh target/fixture-edition-2021",
            "CALLGATE_TEST_FIXTURE=$PWD/target/fixture-edition-2021/target/release/libcallgate_fixture.so CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:edition}",
        ],
    },
    Row {
        name: "fat-lto",
        build: "the fixture with fat LTO and one codegen unit",
        guards: "the runtime optimised together with the callbacks, across crates",
        needs: &[CC, CXX],
        commands: &[
            "CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 cargo build --quiet -p callgate-fixture --release --target-dir target/fixture-lto",
            "CALLGATE_TEST_FIXTURE=$PWD/target/fixture-lto/release/libcallgate_fixture.so CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:builds}",
        ],
    },
    Row {
        name: "staticlib",
        build: "the fixture as a staticlib, linked into the C programs",
        guards: "callbacks in the executable: its TLS, its init",
        needs: &[CC],
        commands: &[
            "cargo rustc --quiet -p callgate-fixture --release --target-dir target/fixture-staticlib --crate-type staticlib",
            "CALLGATE_TEST_STATICLIB=$PWD/target/fixture-staticlib/release/libcallgate_fixture.a CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:linked}",
        ],
    },
    Row {
        name: "opt-s",
        build: "the fixture at opt-level \"s\"",
        guards: "a size-optimised profile, which inlines less (unwinds out of `extern \"C\"` functions may abort there)",
        needs: &[CC, CXX],
        commands: &[
            "CARGO_PROFILE_RELEASE_OPT_LEVEL=s cargo build --quiet -p callgate-fixture --release --target-dir target/fixture-opt-s",
            "CALLGATE_TEST_FIXTURE=$PWD/target/fixture-opt-s/release/libcallgate_fixture.so CALLGATE_FIXTURE_OPT_LEVEL=s CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:builds}",
        ],
    },
    Row {
        name: "opt-z",
        build: "the fixture at opt-level \"z\"",
        guards: "the smallest profile, as opt-s",
        needs: &[CC, CXX],
        commands: &[
            "CARGO_PROFILE_RELEASE_OPT_LEVEL=z cargo build --quiet -p callgate-fixture --release --target-dir target/fixture-opt-z",
            "CALLGATE_TEST_FIXTURE=$PWD/target/fixture-opt-z/release/libcallgate_fixture.so CALLGATE_FIXTURE_OPT_LEVEL=z CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:builds}",
        ],
    },
    Row {
        name: "mixed-profile",
        build: "the fixture in a dev build with callgate optimised (`[profile.dev.package.\"*\"] opt-level = 3`)",
        guards: "the call path is compiled at the user's level: not forced inline into unoptimised code",
        needs: &[CC, CXX],
        commands: &[
            "cargo build --quiet -p callgate-fixture --config 'profile.dev.package.callgate.opt-level=3' --target-dir target/fixture-mixed",
            "CALLGATE_TEST_FIXTURE=$PWD/target/fixture-mixed/debug/libcallgate_fixture.so cargo test -p callgate-dev --test hosts -- depth::",
        ],
    },
    Row {
        name: "panic-abort",
        build: "the fixture with `panic = \"abort\"` and no unwind tables",
        guards: "the runtime's `asm!` assembles without unwind tables; a panic aborts",
        needs: &[CC],
        commands: &[
            "RUSTFLAGS='-C force-unwind-tables=no -C panic=abort' cargo build --quiet -p callgate-fixture --release --target x86_64-unknown-linux-gnu --target-dir target/no-unwind-tables",
            "CALLGATE_TEST_FIXTURE=$PWD/target/no-unwind-tables/x86_64-unknown-linux-gnu/release/libcallgate_fixture.so CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- a_panic_returns_the_fallback_or_with_the_abort_strategy_aborts",
        ],
    },
    Row {
        name: "portable-tls",
        build: "the workspace with the portable `thread_local!` slot; the fixture in release",
        guards: "the slot of targets other than x86-64 glibc Linux and mingw-w64 Windows",
        needs: &[CC],
        commands: &[
            "RUSTFLAGS='--cfg callgate_portable_tls' cargo test -p callgate --lib --target-dir target/portable-tls",
            "RUSTFLAGS='--cfg callgate_portable_tls' CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --target-dir target/portable-tls --test hosts -- {hosts:portable}",
            "RUSTFLAGS='--cfg callgate_portable_tls' CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --target-dir target/portable-tls --test runtime -- fork_",
            "RUSTFLAGS='--cfg callgate_portable_tls' CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --target-dir target/portable-tls --test gate -- fork_contended::",
        ],
    },
    Row {
        name: "loom",
        build: "the runtime's lock-free core under loom",
        guards: "the orderings of the gate, the free list, the turns and the hazard words",
        needs: &[],
        commands: &[
            "RUSTFLAGS='--cfg callgate_loom' LOOM_MAX_PREEMPTIONS=3 cargo test -p callgate --lib --release --target-dir target/loom",
        ],
    },
    Row {
        name: "musl",
        build: "the fixture and the C hosts for x86_64-unknown-linux-musl",
        guards: "musl's loader, its pthread keys, its exit without unwinding",
        needs: &[
            Need::Target("x86_64-unknown-linux-musl"),
            Need::Tool("musl-gcc", "apt-get install musl-tools"),
        ],
        commands: &["scripts/musl.sh"],
    },
    Row {
        name: "aarch64",
        build: "the runtime (debug), the release fixture and the C hosts for aarch64-unknown-linux-gnu, run under qemu-user",
        guards: "the slot at its static TLS offset and in dynamic TLS, the fast paths' machine code (tests/codegen) and the hosts on another architecture",
        needs: &[
            Need::Target("aarch64-unknown-linux-gnu"),
            Need::Tool(
                "aarch64-linux-gnu-gcc",
                "apt-get install gcc-aarch64-linux-gnu",
            ),
            Need::Tool(
                "aarch64-linux-gnu-g++",
                "apt-get install g++-aarch64-linux-gnu",
            ),
            Need::Tool(
                "aarch64-linux-gnu-objdump",
                "apt-get install binutils-aarch64-linux-gnu",
            ),
            Need::Tool("qemu-aarch64", "apt-get install qemu-user"),
            Need::File(
                "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1",
                "apt-get install libc6-dev-arm64-cross",
            ),
        ],
        commands: &["scripts/aarch64.sh"],
    },
    Row {
        name: "windows",
        build: "the runtime and the fixture DLL for x86_64-pc-windows-gnu, run under wine",
        guards: "FLS exit callbacks, fibers, deferred init, LoadLibrary/FreeLibrary",
        needs: &[
            Need::Target("x86_64-pc-windows-gnu"),
            Need::Target("x86_64-pc-windows-msvc"),
            Need::Target("aarch64-pc-windows-msvc"),
            Need::Tool(
                "x86_64-w64-mingw32-gcc",
                "apt-get install gcc-mingw-w64-x86-64-win32",
            ),
            Need::Tool("wine", "apt-get install wine64"),
        ],
        commands: &["scripts/windows.sh"],
    },
    Row {
        name: "msrv",
        build: "the published crates with the declared rust-version",
        guards: "that they build with the declared rust-version (Linux, the portable slot, Windows)",
        needs: &[Need::Toolchain(
            RUST_VERSION,
            &["rust-std-x86_64-pc-windows-gnu"],
        )],
        commands: &["scripts/msrv.sh"],
    },
    Row {
        name: "miri",
        build: "the runtime's unit tests and generated trampolines under Miri",
        guards: "the unsafe code's aliasing (Stacked and Tree Borrows), data races, leaks",
        needs: &[Need::Toolchain("nightly", &["rust-src", "miri"])],
        commands: &["scripts/miri.sh"],
    },
    Row {
        name: "sanitizers",
        build: "the fixture and hosts with ThreadSanitizer and AddressSanitizer",
        guards: "data races and memory errors the C hosts can provoke",
        needs: &[NIGHTLY_SRC, CC],
        commands: &["scripts/sanitizers.sh"],
    },
    Row {
        name: "valgrind",
        build: "the debug fixture and test programs under memcheck and helgrind",
        guards: "no leak, no invalid access, no race the annotations do not explain",
        needs: &[Need::Tool("valgrind", "apt-get install valgrind"), CC],
        commands: &["scripts/valgrind.sh"],
    },
    Row {
        name: "bench",
        build: "the benchmark and its fixtures, one round",
        guards: "the benchmark still runs and writes its four tables and its JSON",
        needs: &[CC],
        commands: &["scripts/bench-smoke.sh"],
    },
    Row {
        name: "package",
        build: "the published crates from their packaged sources",
        guards: "that what `cargo publish` would upload builds",
        needs: &[],
        commands: &[
            // Cargo reuses a registry crate's build whatever its sources:
            // this version's extracted sources and builds go first.
            "rm -rf \"${CARGO_HOME:-$HOME/.cargo}\"/registry/src/*/callgate-{macros-,header-,}0.1.0 target/package-verify/debug/.fingerprint/callgate-* target/package-verify/debug/deps/*callgate*",
            "cargo package -p callgate-macros -p callgate -p callgate-header --target-dir target/package-verify --quiet",
        ],
    },
];

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

/// `command` with each `{hosts:SET}` replaced by the set's test filters.
fn expand(command: &str) -> String {
    let mut expanded = command.to_owned();
    for (set, tests) in HOST_SETS {
        let filters: Vec<String> = tests
            .split_whitespace()
            .map(|test| format!("{test}::"))
            .collect();
        expanded = expanded.replace(&format!("{{hosts:{set}}}"), &filters.join(" "));
    }
    assert!(
        !expanded.contains("{hosts:"),
        "an unknown set of host tests in `{command}`"
    );
    expanded
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
