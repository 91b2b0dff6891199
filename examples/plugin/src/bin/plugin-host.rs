//! Runs the `plugin` example: the C host (`host.c`, compiled by the build
//! script) loads the plugin library cargo built along with this binary.
//!
//! ```text
//! cargo run -p callgate-example-plugin --bin plugin-host
//! ```

use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let library = match library() {
        Ok(library) => library,
        Err(message) => {
            eprintln!("plugin-host: {message}");
            return ExitCode::FAILURE;
        }
    };
    let host = env!("PLUGIN_HOST_C");
    match Command::new(host).arg(&library).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => {
            eprintln!("plugin-host: the C host {status}");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("plugin-host: cannot run {host}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The plugin library: in `deps/` beside this binary when cargo built it as
/// the binary's dependency, beside it after `cargo build`.
fn library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|error| format!("cannot find myself: {error}"))?;
    let dir = exe.parent().ok_or("the executable has no directory")?;
    let name = format!("{DLL_PREFIX}callgate_example_plugin{DLL_SUFFIX}");
    [dir.join("deps").join(&name), dir.join(&name)]
        .into_iter()
        .find(|path| path.exists())
        .ok_or_else(|| {
            format!(
                "{name} is not in {}: build it with `cargo build -p callgate-example-plugin`",
                dir.display()
            )
        })
}
