//! The benchmark callbacks in a `cdylib` loaded with `dlopen`: the hard
//! case, where a Rust `thread_local!` is general-dynamic TLS.

use core::ffi::{CStr, c_void};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Callbacks;
use crate::harness::{CstrFn, IntFn, SliceFn};
use crate::library::Library;

/// The fixture package (`fixture/`) and the file cargo builds from it.
const PACKAGE: &str = "callgate-bench-fixture";
const FILE: &str = "libcallgate_bench_fixture.so";

/// The fixture paddings, in bytes: `CALLGATE_BENCH_PAD` for each build of
/// [`placements`]. Padding moves every function of the fixture by that many
/// bytes, so the four builds put `bench_bound` at each 16-byte placement
/// within a 64-byte line.
pub const PADS: [usize; 4] = [0, 16, 32, 48];

/// Where the fixture library is: `$CALLGATE_BENCH_FIXTURE` if set, else
/// built with cargo (same profile as this binary) into this binary's
/// target directory.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CALLGATE_BENCH_FIXTURE") {
        return Ok(path.into());
    }
    let dirs = Dirs::of_this_program()?;
    build(&dirs.target, &[])?;
    Ok(dirs.profile.join(FILE))
}

/// Whether the fixture comes from `$CALLGATE_BENCH_FIXTURE` rather than
/// from cargo (then its variants are not built).
pub fn is_given() -> bool {
    std::env::var_os("CALLGATE_BENCH_FIXTURE").is_some()
}

/// Builds the fixture once per padding of [`PADS`] and copies each build to
/// `<target>/callgate-bench/<profile>/pad<N>/`; returns the paddings and
/// the copies' paths. The last build is the default one (no padding), so
/// the file [`locate`] returns is the default again afterwards.
pub fn placements() -> Result<Vec<(usize, PathBuf)>, String> {
    let dirs = Dirs::of_this_program()?;
    let mut copies = Vec::new();
    // Padding 0 last: it is also the default build.
    for &pad in PADS.iter().rev() {
        let env: &[(&str, OsString)] = if pad == 0 {
            &[]
        } else {
            &[("CALLGATE_BENCH_PAD", pad.to_string().into())]
        };
        build(&dirs.target, env)?;
        let dir = dirs.variants.join(format!("pad{pad}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let copy = dir.join(FILE);
        std::fs::copy(dirs.profile.join(FILE), &copy)
            .map_err(|e| format!("cannot copy the fixture to {}: {e}", copy.display()))?;
        copies.push((pad, copy));
    }
    copies.reverse();
    Ok(copies)
}

/// Builds the fixture with `--cfg callgate_portable_tls` (callgate's
/// per-thread pointer in a `thread_local!`, not its own TLS slot) into a
/// target directory of its own, so the default builds are not rebuilt;
/// returns the library's path.
pub fn portable_tls() -> Result<PathBuf, String> {
    let dirs = Dirs::of_this_program()?;
    let target = dirs.target.join("callgate-bench-portable-tls");
    let mut rustflags = std::env::var_os("RUSTFLAGS").unwrap_or_default();
    rustflags.push(" --cfg callgate_portable_tls");
    build(&target, &[("RUSTFLAGS", rustflags)])?;
    Ok(target.join(dirs.profile_name).join(FILE))
}

/// This program's target directory: where cargo builds the fixture, and
/// where `bench/go/install.sh` puts Go by default.
pub fn target_dir() -> Result<PathBuf, String> {
    Ok(Dirs::of_this_program()?.target)
}

/// The directories the fixture builds go to.
struct Dirs {
    /// This program's target directory.
    target: PathBuf,
    /// Its profile directory (`release` or `debug`), where cargo puts the
    /// default build.
    profile: PathBuf,
    /// The profile directory's name.
    profile_name: &'static str,
    /// Where copies of the padded builds go.
    variants: PathBuf,
}

impl Dirs {
    fn of_this_program() -> Result<Dirs, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
        let profile = exe.parent().ok_or("this program has no directory")?;
        let target = profile.parent().ok_or("no target directory")?;
        let profile_name = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        Ok(Dirs {
            target: target.to_owned(),
            profile: profile.to_owned(),
            profile_name,
            variants: target.join("callgate-bench").join(profile_name),
        })
    }
}

/// Builds the fixture with cargo into `target_dir`, in this binary's
/// profile, with `env` set for cargo.
fn build(target_dir: &Path, env: &[(&str, OsString)]) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--package", PACKAGE, "--target-dir"])
        .arg(target_dir)
        .env_remove("CALLGATE_BENCH_PAD")
        .envs(env.iter().map(|(key, value)| (key, value)));
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let status = build
        .status()
        .map_err(|e| format!("cannot run cargo to build {PACKAGE}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building {PACKAGE} failed ({status}); to load an existing build, set \
             CALLGATE_BENCH_FIXTURE=<path to {FILE}>"
        ));
    }
    Ok(())
}

/// Loads the library at `path` with `dlopen` (it stays loaded) and looks up
/// its callbacks.
pub fn load(path: &Path) -> Result<Callbacks, String> {
    let library = Library::open(path)?;
    let int_fn = |name: &CStr| -> Result<IntFn, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(i32) -> i32`, and the library is never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, IntFn>(address) })
    };
    let cstr_fn = |name: &CStr| -> Result<CstrFn, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(*const c_char, i32) -> i32`, and the library is
        // never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, CstrFn>(address) })
    };
    let slice_fn = |name: &CStr| -> Result<SliceFn, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(*const u8, usize) -> u32`, and the library is
        // never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, SliceFn>(address) })
    };
    Ok(Callbacks {
        raw: int_fn(c"bench_raw")?,
        raw_cstr: cstr_fn(c"bench_raw_cstr")?,
        bound: int_fn(c"bench_bound")?,
        per_call: int_fn(c"bench_per_call")?,
        local: int_fn(c"bench_local")?,
        cstr: cstr_fn(c"bench_cstr")?,
        raw_sum: slice_fn(c"bench_raw_sum")?,
        sum: slice_fn(c"bench_sum")?,
    })
}
