//! Plugin hosts: many distinct callgate libraries in one process, and
//! `dlclose` of one at any time, from C programs (`tests/c/hosts/plugin*.c`).
//!
//! The libraries are copies of one `cdylib` built from
//! `tests/plugin/template.rs` in a throwaway workspace under the target
//! directory, once per test process: copy NNN is the build with its soname
//! rewritten in place to `libcallgate_plugin_NNN.so`. That is all a build
//! per copy would change that the loader reads; each copy is a file of its
//! own, so the loader maps it apart from the others, with its own TLS
//! block, statics and init.

use crate::host;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// How many copies the workspace holds.
const COPIES: usize = 100;

/// The directory holding `libcallgate_plugin_000.so` … built from the
/// generated workspace.
fn plugins() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_plugins)
}

fn build_plugins() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("plugins");
    let template = root.join("tests/plugin/template.rs");
    let runtime = root.join("runtime");
    write(
        &workspace.join("Cargo.toml"),
        &format!(
            "[workspace]\n\n[package]\nname = \"callgate-plugin\"\nversion = \"0.1.0\"\n\
             edition = \"2024\"\npublish = false\n\n\
             [lib]\ncrate-type = [\"cdylib\"]\npath = {:?}\n\n\
             [dependencies]\ncallgate = {{ path = {:?} }}\n\n\
             [profile.dev]\ndebug = 0\n",
            template.display().to_string(),
            runtime.display().to_string()
        ),
    );
    write(
        &workspace.join("build.rs"),
        &format!(
            "fn main() {{\n    println!(\"cargo:rustc-cdylib-link-arg=-Wl,-soname,{}\");\n}}\n",
            soname(0)
        ),
    );
    // The versions the main workspace is tested with.
    std::fs::copy(root.join("Cargo.lock"), workspace.join("Cargo.lock")).expect("copy Cargo.lock");
    let target = workspace.join("target");
    // The profile of the fixture (`CALLGATE_FIXTURE_PROFILE`): the release
    // build is what plugins ship as, where code the debug build keeps in
    // frames of its own is inlined and shrink-wrapped.
    let release = host::fixture_is_release();
    let mut args = vec!["build", "--offline", "--quiet"];
    if release {
        args.push("--release");
    }
    // Cross-built where the fixture is (with the linker the environment
    // names for that target).
    let cross = host::cross_target();
    if let Some(triple) = &cross {
        args.extend(["--target", triple]);
    }
    let output = Command::new(env!("CARGO"))
        .args(&args)
        .current_dir(&workspace)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .expect("run cargo for the plugin workspace");
    assert!(
        output.status.success(),
        "building the plugins failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dir =
        target
            .join(cross.unwrap_or_default())
            .join(if release { "release" } else { "debug" });
    let built = std::fs::read(dir.join("libcallgate_plugin.so")).expect("read the plugin");
    let first = format!("{}\0", soname(0));
    let at: Vec<usize> = built
        .windows(first.len())
        .enumerate()
        .filter_map(|(at, bytes)| (bytes == first.as_bytes()).then_some(at))
        .collect();
    assert!(!at.is_empty(), "the plugin has no soname {}", soname(0));
    for index in 0..COPIES {
        let mut copy = built.clone();
        for &at in &at {
            copy[at..at + first.len() - 1].copy_from_slice(soname(index).as_bytes());
        }
        std::fs::write(dir.join(soname(index)), copy).expect("write a plugin copy");
    }
    dir
}

/// Copy `index`'s soname and file name: as long for every copy.
fn soname(index: usize) -> String {
    format!("libcallgate_plugin_{index:03}.so")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create a directory");
    // Unchanged files keep their times, so cargo rebuilds nothing.
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("write a generated file");
    }
}

fn plugin(index: usize) -> PathBuf {
    plugins().join(soname(index))
}

fn host(name: &str) -> Command {
    let mut command = Command::new(host::hosts_dir().join(name));
    command
        .env_remove("CALLGATE")
        .env_remove("PLUGIN_INIT_MS")
        .env_remove("GLIBC_TUNABLES")
        .env("RUST_BACKTRACE", "0");
    command
}

/// Every copy is a distinct library: its own soname, and no TLS model that
/// needs static TLS.
#[test]
fn copies_are_distinct_libraries_without_static_tls() {
    for index in [0, COPIES - 1] {
        let path = plugin(index);
        let output = Command::new("readelf")
            .arg("-dW")
            .arg(&path)
            .output()
            .expect("run readelf");
        let dynamic = String::from_utf8_lossy(&output.stdout);
        let soname = format!("[libcallgate_plugin_{index:03}.so]");
        assert!(
            dynamic.contains(&soname),
            "{} lacks soname {soname}",
            path.display()
        );
        assert!(
            !dynamic.contains("STATIC_TLS"),
            "{} is marked STATIC_TLS:\n{dynamic}",
            path.display()
        );
    }
}

/// 100 copies load into one process under glibc's default tunables, each
/// serves 4 threads bound to it, `dlmopen(LM_ID_NEWLM)` still works, and
/// they all close. The first copies get static TLS; the rest dynamic TLS.
#[test]
fn a_hundred_plugins_bound_from_four_threads() {
    let mut command = host("plugins");
    command.arg(plugins()).arg(COPIES.to_string()).arg("bound");
    let outcome = host::run(&mut command, Duration::from_secs(120));
    outcome.assert_ok();
    assert_eq!(outcome.get("loaded"), Some("100"));
    assert_eq!(outcome.get("dlmopen"), Some("ok"));
    // glibc 2.36's default static TLS surplus for dlopen (the 512 bytes of
    // `rtld.optional_static_tls`) holds the TLS blocks of a few copies; the
    // guide's "Static TLS" known limit states these numbers.
    let static_tls = outcome.number("static_tls");
    assert!(
        (1.0..=8.0).contains(&static_tls),
        "{static_tls} copies got static TLS\n{outcome}"
    );
    assert_malloc_aligned(&outcome);
}

/// No call of `malloc` found the stack misaligned: among them, the TLS
/// descriptor's resolver allocating a thread's block of a copy in dynamic
/// TLS, called from the copy's callbacks (see `tests/hosts/dlclose.rs`).
#[track_caller]
fn assert_malloc_aligned(outcome: &host::Outcome) {
    // The check is x86-64's (its stack alignment rule), compiled into
    // x86-64 hosts only: emulated hosts are aarch64.
    if !host::emulated() {
        assert_eq!(outcome.number("malloc_checked"), 1.0, "{outcome}");
    }
    assert_eq!(outcome.number("misaligned_mallocs"), 0.0, "{outcome}");
}

/// The same with per-call callbacks and a last error left in every copy:
/// after `dlclose` none of the 100 stays mapped.
#[test]
fn a_hundred_plugins_per_call_all_unload() {
    let mut command = host("plugins");
    command
        .arg(plugins())
        .arg(COPIES.to_string())
        .arg("per_call");
    let outcome = host::run(&mut command, Duration::from_secs(120));
    outcome.assert_ok();
    assert_eq!(outcome.get("still_mapped"), Some("0"));
    assert_malloc_aligned(&outcome);
}

/// Load → call from new threads → unload, 300 times (10 000 with
/// `CALLGATE_FULL=1`): the library unloads every time, open fds stay flat,
/// pthread keys are given back (a new key gets a low number) and the RSS
/// does not grow with the cycles.
#[test]
fn load_call_unload_cycles() {
    let cycles = host::size(300, 10_000);
    let mut command = host("plugin_cycles");
    command.arg(plugin(0)).arg(cycles.to_string());
    let outcome = host::run(&mut command, Duration::from_secs(1200));
    outcome.assert_ok();
    assert_eq!(outcome.get("cycles"), Some(cycles.to_string().as_str()));
    // Each cycle creates a key; without deleting it the next key would be
    // numbered past the number of cycles.
    let next_key = outcome.number("next_key");
    assert!(
        next_key < 64.0,
        "pthread keys leak: next key {next_key}\n{outcome}"
    );
    // A leak of the pool (~0.5 KiB) or of the library's mappings per cycle
    // would show as growth proportional to the cycles; allow the noise of
    // the allocator's arenas.
    let growth = outcome.number("rss_end_kib") - outcome.number("rss_warm_kib");
    assert!(growth < 2048.0, "RSS grew by {growth} KiB\n{outcome}");
}

/// `dlclose` while the background init runs, 100 rounds: the library stays
/// mapped until the init's thread has exited, then unloads; no crash.
#[test]
fn dlclose_during_background_init() {
    let mut command = host("plugin_unload");
    command
        .arg(plugin(1))
        .args(["during_init", "100"])
        .env("PLUGIN_INIT_MS", "20");
    let outcome = host::run(&mut command, Duration::from_secs(120));
    outcome.assert_ok();
    assert_eq!(outcome.get("rounds_ok"), Some("100"));
    assert_eq!(outcome.get("held_rounds"), Some("100"));
}

/// A thread holding only a last error outlives the library, 100 rounds: it
/// exits after the unload without running code of the unloaded library.
#[test]
fn dlclose_with_a_thread_holding_a_last_error() {
    let mut command = host("plugin_unload");
    command.arg(plugin(2)).args(["last_error", "100"]);
    let outcome = host::run(&mut command, Duration::from_secs(120));
    outcome.assert_ok();
    assert_eq!(outcome.get("rounds_ok"), Some("100"));
}

/// callgate's own thread-locals in a library take 16 bytes (its context
/// slot and the last-error pointer), and the library is not marked
/// `STATIC_TLS`: the test fixture's TLS symbols and dynamic section.
#[test]
fn callgate_thread_locals_take_sixteen_bytes() {
    let fixture = host::fixture();
    let readelf = |flag: &str| {
        let output = Command::new("readelf")
            .arg(flag)
            .arg(&fixture)
            .output()
            .expect("run readelf");
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let symbols = readelf("-sW");
    // Symbols of the `callgate` crate: `8callgate` in both manglings (the
    // fixture's own crate is `16callgate_fixture`), or the slot's name.
    let ours: Vec<(&str, u64)> = symbols
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (&size, &kind, &name) = (fields.get(2)?, fields.get(3)?, fields.get(7)?);
            let callgate = name.contains("8callgate") || name.starts_with("__callgate_");
            (kind == "TLS" && callgate).then(|| (name, size.parse().expect("a size")))
        })
        .collect();
    assert!(
        ours.iter()
            .any(|(name, _)| *name == "__callgate_current_context"),
        "the slot is missing: {ours:?}"
    );
    let total: u64 = ours.iter().map(|(_, size)| size).sum();
    assert!(
        total <= 16,
        "callgate's thread-locals take {total} bytes: {ours:?}"
    );
    let dynamic = readelf("-dW");
    assert!(
        !dynamic.contains("STATIC_TLS"),
        "the fixture is marked STATIC_TLS"
    );
}
