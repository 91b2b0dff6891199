//! The command line: what it asks for ([`parse_args`]), its usage text,
//! and `--loop`, one call loop of one callback for profilers.

use std::path::PathBuf;

use crate::Callbacks;
use crate::harness::{self, Callback};

/// Samples per row unless `--rounds` says otherwise: the median of an odd
/// count is one real sample.
const ROUNDS: usize = 21;

pub const USAGE: &str =
    "usage: callgate-bench [--json | --markdown] [--rounds <n>] [--save-json <file>]
       callgate-bench --loop <callback> [<calls>] [--linked]

Measures callbacks from C threads into Rust, with and without callgate, and
prints a table (or, with --json, one JSON object of the medians; with
--markdown, the guide's tables of the run). Every row gets one sample per
round; --rounds sets how many (default 21, at least 1). --save-json also
writes the JSON object of the run to <file>, whatever it prints.

--loop makes <calls> (default 10000000) calls of one callback of the cdylib
(--linked: of this binary) from one C thread and prints the time per call:
a workload for profilers (perf, valgrind --tool=callgrind). <callback> is
raw, raw_cstr, bound, per_call, local, cstr, closure, closure_concurrent,
once_cycle, closure_cycle, mutex, user_data, raw_sum or sum.

CALLGATE_BENCH_FIXTURE=<path> loads that build of the cdylib fixture instead
of building it with cargo (the padded and portable_tls builds are then
skipped).";

/// What the command line asks for.
pub enum Command {
    /// The whole benchmark with this many rounds.
    Measure {
        output: Output,
        rounds: usize,
        /// Where to write the run's JSON object too (`--save-json`).
        save_json: Option<PathBuf>,
    },
    /// One call loop of one callback, for profilers.
    Loop {
        callback: String,
        calls: i64,
        linked: bool,
    },
    /// Print the usage.
    Help,
}

/// How `Measure` reports.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// The table of every row, and the figures against the targets.
    Table,
    /// One JSON object of the medians.
    Json,
    /// The guide's tables (guide/src/performance/tables.md).
    Markdown,
}

pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Command, String> {
    let mut output = Output::Table;
    let mut rounds = ROUNDS;
    let mut linked = false;
    let mut looped: Option<(String, Option<i64>)> = None;
    let mut save_json = None;
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--json" | "--markdown" => {
                if output != Output::Table {
                    return Err("--json and --markdown exclude each other".to_owned());
                }
                output = if arg == "--json" {
                    Output::Json
                } else {
                    Output::Markdown
                };
            }
            "--linked" => linked = true,
            "--rounds" => {
                rounds = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n >= 1)
                    .ok_or("--rounds needs a count of at least 1")?;
            }
            "--save-json" => {
                let path = args.next().ok_or("--save-json needs a file")?;
                save_json = Some(PathBuf::from(path));
            }
            "-h" | "--help" => return Ok(Command::Help),
            "--loop" => {
                let callback = args.next().ok_or("--loop needs a callback name")?;
                let calls = match args.peek().map(|next| next.parse::<i64>()) {
                    Some(Ok(calls)) => {
                        args.next();
                        Some(calls)
                    }
                    _ => None,
                };
                looped = Some((callback, calls));
            }
            _ => return Err(format!("unknown argument `{arg}`")),
        }
    }
    Ok(match looped {
        Some((callback, calls)) => Command::Loop {
            callback,
            calls: calls.unwrap_or(10_000_000),
            linked,
        },
        None => Command::Measure {
            output,
            rounds,
            save_json,
        },
    })
}

/// `--loop`: one call loop of one callback, for profilers.
pub fn run_loop(callbacks: &Callbacks, callback: &str, calls: i64) -> Result<(), String> {
    let chosen = match callback {
        "raw" => Callback::Int(callbacks.raw),
        "raw_cstr" => Callback::Cstr(callbacks.raw_cstr),
        "bound" => Callback::Int(callbacks.bound),
        "per_call" => Callback::Int(callbacks.per_call),
        "local" => Callback::Int(callbacks.local),
        "cstr" => Callback::Cstr(callbacks.cstr),
        "closure" => Callback::Data(callbacks.closure),
        "closure_concurrent" => Callback::Data(callbacks.closure_concurrent),
        "once_cycle" => Callback::Data(callbacks.once_cycle),
        "closure_cycle" => Callback::Data(callbacks.closure_cycle),
        "mutex" => Callback::Data(callbacks.mutex),
        "user_data" => Callback::Data(callbacks.user_data),
        "raw_sum" => Callback::Slice(callbacks.raw_sum),
        "sum" => Callback::Slice(callbacks.sum),
        _ => return Err(format!("unknown callback `{callback}`")),
    };
    let ns = harness::call_loop(callback, chosen, calls);
    println!(
        "{callback}: {calls} calls, {:.3} ns per call",
        ns / calls as f64
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn parse(args: &[&str]) -> Result<Command, String> {
        parse_args(args.iter().map(|arg| (*arg).to_owned()))
    }

    #[test]
    fn save_json_goes_with_any_output() {
        let command = parse(&["--markdown", "--save-json", "run.json", "--rounds", "3"]);
        assert!(matches!(
            command,
            Ok(Command::Measure {
                output: Output::Markdown,
                rounds: 3,
                save_json: Some(path),
            }) if path == Path::new("run.json")
        ));
        assert!(matches!(
            parse(&[]),
            Ok(Command::Measure {
                output: Output::Table,
                rounds: ROUNDS,
                save_json: None,
            })
        ));
    }

    #[test]
    fn bad_arguments_are_refused_with_a_message() {
        let error = |args: &[&str]| parse(args).err().unwrap_or_default();
        assert_eq!(error(&["--save-json"]), "--save-json needs a file");
        assert_eq!(
            error(&["--rounds", "0"]),
            "--rounds needs a count of at least 1"
        );
        assert_eq!(
            error(&["--json", "--markdown"]),
            "--json and --markdown exclude each other"
        );
        assert_eq!(error(&["--fast"]), "unknown argument `--fast`");
    }
}
