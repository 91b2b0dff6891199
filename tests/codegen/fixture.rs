//! The benchmark fixture's release builds the guard reads, made by cargo
//! in the target directories where the test matrix's other release builds
//! go, so that the runtime is compiled once for both.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::target::Target;

const PACKAGE: &str = "callgate-bench-fixture";
const FILE: &str = "libcallgate_bench_fixture.so";

/// Why the guard cannot read `target`'s code on this machine, if it
/// cannot: its objdump, or its cross linker, is missing.
pub fn missing(target: &Target) -> Option<String> {
    let absent = |tool: &str| Command::new(tool).arg("--version").output().is_err();
    if absent(target.objdump) {
        return Some(format!(
            "needs {} (binutils for {})",
            target.objdump, target.triple
        ));
    }
    let linker = target.linker.filter(|linker| absent(linker))?;
    Some(format!("needs {linker} (to link for {})", target.triple))
}

/// The fixture built in release for `target`, with `rustflags` (the
/// regression's) in `target_dir` under the workspace's target directory,
/// or with none in the target's own ([`Target::target_dir`]). Flags and
/// settings from the environment are left out: the guard reads the build
/// the workspace declares.
pub fn build(target: &Target, rustflags: Option<(&str, &str)>) -> PathBuf {
    let mut dir = workspace_target_dir();
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--quiet", "--release", "-p", PACKAGE])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_RUSTFLAGS")
        // The benchmark's padding moves the trampolines.
        .env_remove("CALLGATE_BENCH_PAD");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CARGO_PROFILE_") {
            cargo.env_remove(key);
        }
    }
    if let Some((flags, subdirectory)) = rustflags {
        cargo.env("RUSTFLAGS", flags);
        dir = dir.join(subdirectory);
    } else {
        dir = dir.join(target.target_dir);
    }
    if let Some(linker) = target.linker {
        let triple = target.triple.to_uppercase().replace('-', "_");
        cargo.env(format!("CARGO_TARGET_{triple}_LINKER"), linker);
    }
    cargo.arg("--target-dir").arg(&dir);
    // The host's target has no directory of its own, as in the matrix's
    // builds; another (a cross build) has.
    if target.triple != host() {
        cargo.args(["--target", target.triple]);
        dir = dir.join(target.triple);
    }
    let output = cargo.output().expect("run cargo to build the fixture");
    assert!(
        output.status.success(),
        "building {PACKAGE} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    dir.join("release").join(FILE)
}

/// The target directory this test binary was built in (it lives in
/// `target/<profile>/deps`).
fn workspace_target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .expect("the test binary lives in target/<profile>/deps")
}

/// The compiler's host target.
pub fn host() -> String {
    let output = Command::new("rustc")
        .arg("-vV")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run rustc -vV");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_owned()
}
