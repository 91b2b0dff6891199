//! Running the C host programs of `tests/c/hosts` against the `cdylib`
//! fixture (`tests/fixture`), shared by the integration tests that drive
//! callgate from real, separately loaded C callers.
//!
//! The fixture is built by cargo, on first use, in this test binary's
//! target directory (see [`fixture`]).

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// True when `CALLGATE_FULL=1` (`cargo xtask test --full`): run the large
/// iteration counts.
pub fn full() -> bool {
    std::env::var_os("CALLGATE_FULL").is_some_and(|value| value == "1")
}

/// `small` normally, `large` under `CALLGATE_FULL=1`.
pub fn size(small: u64, large: u64) -> u64 {
    if full() { large } else { small }
}

/// The build profile of the fixture the hosts load: `CALLGATE_FIXTURE_PROFILE`
/// (`debug` or `release`), or the profile this test binary was built in.
/// `cargo xtask test` runs the host tests against both.
pub fn fixture_profile() -> String {
    match std::env::var("CALLGATE_FIXTURE_PROFILE") {
        Ok(profile) if !profile.is_empty() => profile,
        _ => own_profile_dir()
            .file_name()
            .and_then(|name| name.to_str())
            .expect("a profile directory name")
            .to_owned(),
    }
}

/// True when the hosts and the fixture were built for musl rather than
/// glibc: `CALLGATE_TEST_LIBC=musl`, which `scripts/musl.sh` sets.
pub fn musl() -> bool {
    std::env::var_os("CALLGATE_TEST_LIBC").is_some_and(|libc| libc == "musl")
}

/// True when ending a thread (`pthread_exit`, cancellation) unwinds its
/// frames, as glibc's forced unwind does. musl ends the thread without
/// unwinding: the frames of a callback it ends in are abandoned, as by
/// `longjmp`, in every build.
pub fn thread_exit_unwinds() -> bool {
    !musl()
}

/// True when the hosts run under an emulator: `CALLGATE_TEST_EMULATOR`,
/// which `scripts/aarch64.sh` sets (the hosts and the fixture are then
/// aarch64 code under qemu-user). qemu-user keeps about 280 KiB for every
/// thread that ever ran (measured with a C program that only creates and
/// joins threads), so a host's memory says nothing about callgate's there.
pub fn emulated() -> bool {
    std::env::var_os("CALLGATE_TEST_EMULATOR").is_some_and(|emulator| !emulator.is_empty())
}

/// The Rust target the fixture was built for, where it is not the host's:
/// `CALLGATE_TEST_TARGET`, which `scripts/aarch64.sh` sets. Libraries a
/// test builds itself (the plugin copies) are built for it too.
pub fn cross_target() -> Option<String> {
    std::env::var("CALLGATE_TEST_TARGET")
        .ok()
        .filter(|target| !target.is_empty())
}

/// True when the fixture is an optimised build.
pub fn fixture_is_release() -> bool {
    fixture_profile() == "release"
}

/// True when the fixture was built at an `opt-level` where callgate's
/// out-of-line call path can stop an unwind out of a C function declared
/// `extern "C"` (`pthread_exit`, a cancellation, a C++ exception): "1",
/// "s" or "z" in `CALLGATE_FIXTURE_OPT_LEVEL`, which `cargo xtask test`
/// sets for its builds at those levels. The process may then abort there
/// instead of recovering (the guide's Known limits).
pub fn extern_c_unwind_may_abort() -> bool {
    std::env::var("CALLGATE_FIXTURE_OPT_LEVEL")
        .is_ok_and(|level| ["1", "s", "z"].contains(&level.as_str()))
}

/// target/<profile> of this test binary.
fn own_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    // target/<profile>/deps/<test>-<hash>
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps")
        .to_path_buf()
}

/// The fixture library the hosts load: `libcallgate_fixture.so` in
/// `target/<fixture_profile()>`, built (or found fresh) by cargo on the
/// first call, so that no test runs against a library older than the
/// sources; or `CALLGATE_TEST_FIXTURE` where that is set (a build of
/// another kind, which the test matrix makes first).
pub fn fixture() -> PathBuf {
    if let Some(library) = std::env::var_os("CALLGATE_TEST_FIXTURE") {
        return library.into();
    }
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_fixture).clone()
}

/// Builds the fixture in this test binary's target directory, with the
/// profile [`fixture_profile`] names and this process's `RUSTFLAGS`: a
/// no-op when it is fresh.
fn build_fixture() -> PathBuf {
    let own = own_profile_dir();
    let target = own.parent().expect("target/<profile> has a parent");
    let profile = fixture_profile();
    let output = Command::new(env!("CARGO"))
        .args(["build", "--quiet", "-p", "callgate-fixture", "--target-dir"])
        .arg(target)
        .args([
            "--profile",
            if profile == "debug" { "dev" } else { &profile },
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo to build the fixture");
    assert!(
        output.status.success(),
        "building the fixture failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    target.join(&profile).join("libcallgate_fixture.so")
}

/// Where the host programs are: those the build script compiled, or
/// `CALLGATE_TEST_HOSTS` where that is set (`scripts/musl.sh`: hosts
/// compiled for another C library, to load a fixture built for it).
pub fn hosts_dir() -> PathBuf {
    std::env::var_os("CALLGATE_TEST_HOSTS")
        .map_or_else(|| PathBuf::from(env!("CALLGATE_HOSTS_DIR")), PathBuf::from)
}

/// A command running host program `name` with the fixture as its first
/// argument, a clean `CALLGATE`/`FIXTURE_INIT` and no `RUST_BACKTRACE`
/// noise.
pub fn host(name: &str) -> Command {
    let program = hosts_dir().join(name);
    assert!(
        program.exists(),
        "host program {} missing",
        program.display()
    );
    let mut command = Command::new(program);
    command
        .arg(fixture())
        .env_remove("CALLGATE")
        .env_remove("FIXTURE_INIT")
        .env("RUST_BACKTRACE", "0");
    // `cargo xtask test` runs the C-host tests once more with the fixture in
    // dynamic TLS: glibc's static TLS reserve for `dlopen` set to 0, and the
    // host checking that the fixture's block did not land in static TLS.
    if std::env::var_os("CALLGATE_TEST_DYNAMIC_TLS").is_some() {
        command
            .env("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=0")
            .env("CALLGATE_EXPECT_DYNAMIC_TLS", "1");
    }
    command
}

/// What C needs to know about the fixture's types that its generated
/// header does not define: `Reenter` and `UnwindingReenter` are type
/// aliases (function pointers). The header defines `Pair`, `Turn` and
/// `Tier` itself.
const PRELUDE: &str = "\
typedef int64_t (*Reenter)(int32_t depth);
typedef int64_t (*UnwindingReenter)(int32_t depth);
";

/// A command running the C program `tests/c/linked/NAME.c`, compiled with
/// warnings as errors against the header `callgate-header` generates from
/// the fixture (`fixture.h`) and linked against the fixture. It is built
/// once per test process, into `$CARGO_TARGET_TMPDIR/linked/NAME`, where
/// `scripts/valgrind.sh` finds it.
pub fn linked(name: &str) -> Command {
    use callgate_header::{HeaderOptions, extract, render};
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("linked");
    let program = dir.join(name);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if !built.iter().any(|done| done == name) {
        let library = fixture();
        let bytes = std::fs::read(&library).expect("read the fixture");
        let declarations = extract(&bytes).expect("the fixture's declarations are readable");
        let options = HeaderOptions::new("FIXTURE_H")
            .with_prelude(PRELUDE)
            .with_defined_type("Reenter")
            .with_defined_type("UnwindingReenter");
        std::fs::create_dir_all(&dir).expect("create the linked hosts' directory");
        std::fs::write(
            dir.join("fixture.h"),
            render(&declarations, &options).expect("a header"),
        )
        .expect("write the header");
        let source =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/linked/{name}.c"));
        let mut cc = Command::new("cc");
        cc.args([
            "-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-pthread", "-I",
        ])
        .arg(&dir)
        .arg(&source)
        .arg("-o")
        .arg(&program);
        // `CALLGATE_TEST_STATICLIB`: the fixture's sources built as a
        // `staticlib`, linked into the program (the header still comes from
        // the `cdylib`, built from the same sources), with the native
        // libraries `rustc --print native-static-libs` names for it.
        if let Some(archive) = std::env::var_os("CALLGATE_TEST_STATICLIB") {
            cc.arg(archive).args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        } else {
            let library_dir = library.parent().expect("the fixture's directory");
            cc.arg("-L")
                .arg(library_dir)
                .arg("-lcallgate_fixture")
                .arg(rpath(library_dir));
        }
        let output = cc
            .output()
            .unwrap_or_else(|error| panic!("cannot run cc: {error}"));
        assert!(
            output.status.success(),
            "compiling {} failed:\n{}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        built.push(name.to_owned());
    }
    let mut command = Command::new(program);
    // Without cargo's LD_LIBRARY_PATH, which names target/debug: a loader
    // that searches it first (musl's) would load the fixture built there.
    command
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("CALLGATE")
        .env_remove("FIXTURE_INIT")
        .env("RUST_BACKTRACE", "0");
    command
}

/// The linker flag that makes a program load the fixture from `dir`: a
/// DT_RPATH, which glibc searches before LD_LIBRARY_PATH (a DT_RUNPATH
/// comes after it, and cargo's LD_LIBRARY_PATH names target/debug, where
/// another build of the fixture may be).
pub fn rpath(dir: &Path) -> String {
    format!("-Wl,--disable-new-dtags,-rpath,{}", dir.display())
}

/// Whether `tool` runs on this machine. Where it does not, says `SKIPPED`
/// for `test` and returns false, so that the test passes; but under CI
/// (`CI=true`), which installs every tool, it fails.
pub fn has_tool(tool: &str, test: &str, install: &str) -> bool {
    if Command::new(tool).arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none_or(|ci| ci != "true"),
        "{tool} is not installed"
    );
    eprintln!("SKIPPED: {test}: needs {tool} (install: {install})");
    false
}

/// What a host run produced.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Outcome {
    /// The value of the last `key=value` line on stdout.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.stdout
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
    }

    /// The value of `key=N`, which must be present.
    pub fn number(&self, key: &str) -> f64 {
        let value = self
            .get(key)
            .unwrap_or_else(|| panic!("`{key}=` missing from the output\n{self}"));
        value
            .parse()
            .unwrap_or_else(|_| panic!("`{key}={value}` is not a number\n{self}"))
    }

    /// The terminating signal, if the host was killed by one.
    pub fn signal(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.status.signal()
    }

    /// Asserts the host exited 0 and printed `result=ok`.
    #[track_caller]
    pub fn assert_ok(&self) -> &Self {
        assert!(
            self.status.success() && self.get("result") == Some("ok"),
            "the host failed\n{self}"
        );
        self
    }

    /// Asserts the host was killed by SIGABRT after printing `message` on
    /// stderr.
    #[track_caller]
    pub fn assert_aborted_with(&self, message: &str) -> &Self {
        assert_eq!(
            self.signal(),
            Some(libc::SIGABRT),
            "expected SIGABRT\n{self}"
        );
        assert!(
            self.stderr.contains(message),
            "stderr lacks {message:?}\n{self}"
        );
        self
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status: {} ({:.2?})\n--- stdout\n{}--- stderr\n{}",
            self.status, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// Runs `command`, killing it (and failing the test) after `timeout`.
#[track_caller]
pub fn run(command: &mut Command, timeout: Duration) -> Outcome {
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {command:?}: {error}"));
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the host") {
            break status;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let status = child.wait().expect("wait for the killed host");
            let outcome = Outcome {
                status,
                stdout: stdout.join().expect("reader"),
                stderr: stderr.join().expect("reader"),
                elapsed: started.elapsed(),
            };
            panic!("{command:?} did not finish within {timeout:?} (deadlock?)\n{outcome}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Outcome {
        status,
        stdout: stdout.join().expect("reader"),
        stderr: stderr.join().expect("reader"),
        elapsed: started.elapsed(),
    }
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}
