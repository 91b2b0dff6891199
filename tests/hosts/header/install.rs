//! From crate to installed C library in one command: `cargo callgate
//! install --prefix` lays the `shapes` example out as cargo-c does (the
//! shared library with its soname and links, the header, the pkg-config
//! file); its C program builds with `cc -std=c11 -Wall -Wextra -Werror
//! -pedantic $(pkg-config --cflags --libs shapes)` and nothing else, and
//! runs; its C++ program builds with `g++ -std=c++17` against the same
//! header, using the owners. `cargo callgate build` makes the same files
//! beside the built library, and `cargo callgate check` tells the
//! committed header from a stale one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::host;

const WORKSPACE: &str = env!("CARGO_MANIFEST_DIR");
const PACKAGE: &str = "callgate-example-shapes";

/// The directory of this package's `cargo-callgate`, built (or found
/// fresh) by cargo on first use, in this test binary's target directory.
fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        // target/<profile>/deps/<test>
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>");
        let target = profile_dir.parent().expect("target/");
        let output = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "-p",
                "callgate-header",
                "--bin",
                "cargo-callgate",
            ])
            .arg("--target-dir")
            .arg(target)
            .current_dir(WORKSPACE)
            .output()
            .expect("run cargo to build cargo-callgate");
        succeeded("building cargo-callgate", &output);
        target.join("debug")
    })
}

/// `cargo callgate ARGS`, as a user runs it: cargo finds the subcommand on
/// `PATH`.
fn cargo_callgate(args: &[&str]) -> Command {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(
        std::iter::once(bin_dir().to_path_buf()).chain(std::env::split_paths(&path)),
    )
    .expect("a PATH");
    let mut command = Command::new(env!("CARGO"));
    command
        .arg("callgate")
        .args(args)
        .env("PATH", path)
        .current_dir(WORKSPACE);
    command
}

fn succeeded(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Installs the example under a fresh prefix, once for the tests below.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shapes-prefix");
        let _ = std::fs::remove_dir_all(&prefix);
        let output = cargo_callgate(&["install", "--debug", "--cxx-owners", "-p", PACKAGE])
            .arg("--prefix")
            .arg(&prefix)
            .output()
            .expect("run cargo callgate install");
        succeeded("cargo callgate install", &output);
        prefix
    })
}

/// Runs `script` with `sh`, the installed `shapes.pc` on pkg-config's path,
/// in `dir`.
fn shell(script: &str, dir: &Path) -> Output {
    let pkgconfig = prefix().join("lib/pkgconfig");
    Command::new("sh")
        .args(["-c", script])
        .env("PKG_CONFIG_PATH", pkgconfig)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|error| panic!("cannot run sh: {error}"))
}

fn example(file: &str) -> PathBuf {
    Path::new(WORKSPACE).join("examples/shapes").join(file)
}

#[test]
fn the_subcommand_reports_its_version() {
    let output = cargo_callgate(&["--version"])
        .output()
        .expect("run cargo callgate");
    succeeded("cargo callgate --version", &output);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        format!("cargo-callgate {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn install_lays_out_lib_include_and_pkgconfig() {
    let lib = prefix().join("lib");
    assert!(lib.join("libshapes.so.0.1.0").is_file());
    for (link, target) in [
        ("libshapes.so.0.1", "libshapes.so.0.1.0"),
        ("libshapes.so", "libshapes.so.0.1"),
    ] {
        let found = std::fs::read_link(lib.join(link))
            .unwrap_or_else(|error| panic!("{link} is not a link: {error}"));
        assert_eq!(found, Path::new(target), "{link}");
    }
    let header = std::fs::read_to_string(prefix().join("include/shapes/shapes.h"))
        .expect("the installed header");
    let committed = std::fs::read_to_string(example("include/shapes.h")).expect("the header");
    assert!(
        header == committed,
        "the installed header is not the committed one"
    );
    let pc = std::fs::read_to_string(lib.join("pkgconfig/shapes.pc")).expect("shapes.pc");
    for line in [
        format!("prefix={}", prefix().display()),
        "includedir=${prefix}/include/shapes".to_owned(),
        "Libs: -L${libdir} -lshapes".to_owned(),
        format!("Version: {}", env!("CARGO_PKG_VERSION")),
    ] {
        assert!(pc.lines().any(|l| l == line), "no `{line}` in\n{pc}");
    }

    let output = Command::new("readelf")
        .arg("-d")
        .arg(lib.join("libshapes.so.0.1.0"))
        .output()
        .expect("run readelf (binutils)");
    succeeded("readelf -d", &output);
    let dynamic = String::from_utf8_lossy(&output.stdout);
    let soname = dynamic
        .lines()
        .find(|line| line.contains("(SONAME)"))
        .unwrap_or_else(|| panic!("no soname:\n{dynamic}"));
    eprintln!("readelf -d libshapes.so.0.1.0:{soname}");
    assert!(
        soname.ends_with("Library soname: [libshapes.so.0.1]"),
        "{soname}"
    );
}

/// Builds `source` with `compile` (a shell command with `$SOURCE` and
/// `$BINARY`) and runs it against the installed library.
/// Whether pkg-config runs here (else `SKIPPED`, see `host::has_tool`).
fn has_pkg_config(test: &str) -> bool {
    host::has_tool("pkg-config", test, "apt-get install pkg-config")
}

fn build_and_run(source: &str, compile: &str, expected: &str) {
    if !has_pkg_config(&format!("a program built from {source} with pkg-config")) {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shapes-programs");
    std::fs::create_dir_all(&dir).expect("create the test directory");
    let binary = dir.join(source.replace('.', "-"));
    let script = compile
        .replace(
            "$SOURCE",
            &example(&format!("c/{source}")).display().to_string(),
        )
        .replace("$BINARY", &binary.display().to_string());
    let output = shell(&script, &dir);
    succeeded(&script, &output);
    eprintln!("{script}: compiled");
    let outcome = host::run(
        Command::new(&binary)
            .env("LD_LIBRARY_PATH", prefix().join("lib"))
            .env_remove("CALLGATE"),
        std::time::Duration::from_secs(60),
    );
    assert!(
        outcome.status.success() && outcome.stdout.contains(expected),
        "the program failed, or printed no `{expected}`:\n{outcome}"
    );
}

#[test]
fn a_c_program_builds_with_pkg_config_alone_and_runs() {
    build_and_run(
        "demo.c",
        "cc -std=c11 -Wall -Wextra -Werror -pedantic $SOURCE \
         $(pkg-config --cflags --libs shapes) -o $BINARY",
        "shapes from C: ok",
    );
}

#[test]
fn a_cpp_program_uses_the_owners() {
    build_and_run(
        "demo.cc",
        "g++ -std=c++17 -Wall -Wextra -Werror $SOURCE \
         $(pkg-config --cflags --libs shapes) -o $BINARY",
        "shapes from C++: ok",
    );
}

#[test]
fn build_writes_the_header_and_pkg_config_beside_the_library() {
    let output = cargo_callgate(&["build", "-p", PACKAGE])
        .output()
        .expect("run cargo callgate build");
    succeeded("cargo callgate build", &output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let out_dir = stderr
        .lines()
        .find_map(|line| line.trim().strip_prefix("Written "))
        .map(|header| {
            Path::new(header)
                .parent()
                .expect("a directory")
                .to_path_buf()
        })
        .unwrap_or_else(|| panic!("no file written:\n{stderr}"));
    for file in ["shapes.h", "shapes-uninstalled.pc", "libshapes.so.0.1"] {
        assert!(
            out_dir.join(file).exists(),
            "no {file} in {}",
            out_dir.display()
        );
    }
    // pkg-config prefers `shapes-uninstalled.pc`: a program builds against
    // the build directory, and runs with the library found there.
    if !has_pkg_config("a C program built against `cargo callgate build`'s output") {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shapes-programs");
    std::fs::create_dir_all(&dir).expect("create the test directory");
    let binary = dir.join("demo-uninstalled");
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cc -std=c11 -Wall -Wextra -Werror -pedantic {} $(pkg-config --cflags --libs shapes) \
             -o {}",
            example("c/demo.c").display(),
            binary.display()
        ))
        .env("PKG_CONFIG_PATH", &out_dir)
        .output()
        .expect("run sh");
    succeeded("compiling demo.c against the build directory", &output);
    let outcome = host::run(
        Command::new(&binary)
            .env("LD_LIBRARY_PATH", &out_dir)
            .env_remove("CALLGATE"),
        std::time::Duration::from_secs(60),
    );
    assert!(outcome.status.success(), "{outcome}");
}

#[test]
fn check_fails_on_a_stale_header() {
    let committed = example("include/shapes.h");
    let check = [
        "check",
        "--cxx-owners",
        "--guard",
        "SHAPES_H",
        "-p",
        PACKAGE,
    ];
    let output = cargo_callgate(&check)
        .arg(&committed)
        .output()
        .expect("run cargo callgate check");
    succeeded("cargo callgate check", &output);

    let stale = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shapes-stale.h");
    let text = std::fs::read_to_string(&committed).expect("the committed header");
    std::fs::write(&stale, text.replace("FILL_HATCHED = 4", "FILL_HATCHED = 3"))
        .expect("write the stale header");
    let output = cargo_callgate(&check)
        .arg(&stale)
        .output()
        .expect("run cargo callgate check");
    assert_eq!(output.status.code(), Some(1), "a stale header passes");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("is out of date"), "{stderr}");
}
