//! Compiles the C side of the tests and examples (the benchmark's is in
//! `bench/`, its own package).
//!
//! * `tests/c/*.c` and `examples/c/*.c` become one static library,
//!   `callgate_harness`, linked into the dev package: C functions that take
//!   Rust callbacks as function pointers (or call exported ones) and create
//!   their own threads with `pthread_create`. Only the objects a target
//!   references are pulled in.
//! * `examples/c/openmp.c` is compiled on its own with `-fopenmp` into
//!   `callgate_openmp`, and libgomp is linked, when the C compiler supports
//!   OpenMP; without it the file builds as plain C and its loop runs on one
//!   thread. The rest of the harness does not get `-fopenmp`.
//! * `tests/c/hosts/*.c` are standalone C programs (they load the fixture
//!   library with `dlopen`); each is built into `$OUT_DIR/hosts/<name>` and
//!   the directory is passed to the tests as `CALLGATE_HOSTS_DIR`; the
//!   `.cc` hosts there (C++ exceptions through callbacks) are compiled the
//!   same way by the C++ compiler.
//!
//! * The C libraries the tests hand Rust callbacks to — SQLite, libuv,
//!   glib and Lua 5.4 — are found with `pkg-config` and linked into the dev
//!   package; each one found sets `cfg(callgate_sqlite)`,
//!   `cfg(callgate_libuv)`, `cfg(callgate_glib)` or `cfg(callgate_lua)` for
//!   the tests that use it. A missing one leaves those tests out with a
//!   warning naming the Debian package to install, and fails the build
//!   under CI (`CI=true`).
//!
//! All C is compiled with `-Wall -Wextra -Werror`.
//!
//! * The guide's pages, as `guide/src/SUMMARY.md` lists them, become
//!   `$OUT_DIR/guide_pages.rs`: one item per page whose doc is the page, so
//!   that its Rust examples run as the dev package's doctests.

use std::path::{Path, PathBuf};
use std::process::Command;

fn c_files(dir: &str) -> Vec<PathBuf> {
    println!("cargo:rerun-if-changed={dir}");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "c"))
        .collect();
    files.sort();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    files
}

/// The `.cc` files of `dir`, sorted.
fn cxx_files(dir: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cc"))
        .collect();
    files.sort();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    files
}

/// The one C file that needs OpenMP.
const OPENMP_SOURCE: &str = "examples/c/openmp.c";

/// `(pkg-config module, cfg it sets, Debian package)`.
const LIBRARIES: [(&str, &str, &str); 4] = [
    ("sqlite3", "callgate_sqlite", "libsqlite3-dev"),
    ("libuv", "callgate_libuv", "libuv1-dev"),
    ("glib-2.0", "callgate_glib", "libglib2.0-dev"),
    ("lua5.4", "callgate_lua", "liblua5.4-dev"),
];

fn main() {
    link_libraries();
    guide_pages();
    let harness: Vec<PathBuf> = ["tests/c", "examples/c"]
        .iter()
        .flat_map(|dir| c_files(dir))
        .filter(|path| path != Path::new(OPENMP_SOURCE))
        .collect();
    println!("cargo:rerun-if-changed=tests/c/include");
    let mut build = cc::Build::new();
    build
        .files(&harness)
        .include("tests/c/include")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-pthread")
        .opt_level(2)
        .warnings_into_errors(true);
    if harness.is_empty() {
        return;
    }
    build.compile("callgate_harness");
    build_openmp(Path::new(OPENMP_SOURCE));
    // Test binaries export their symbols so tests can find callbacks with `dlsym`.
    println!("cargo:rustc-link-arg-tests=-rdynamic");
    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:rustc-link-lib=dl");

    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let hosts = out.join("hosts");
    std::fs::create_dir_all(&hosts).expect("create hosts dir");
    let compiler = cc::Build::new().get_compiler();
    for source in c_files("tests/c/hosts") {
        build_host(&compiler, &source, &hosts);
    }
    // The C++ hosts (exceptions thrown through callbacks), compiled by c++.
    let cxx = cc::Build::new().cpp(true).get_compiler();
    for source in cxx_files("tests/c/hosts") {
        build_host(&cxx, &source, &hosts);
    }
    println!("cargo:rustc-env=CALLGATE_HOSTS_DIR={}", hosts.display());
}

/// Compiles `source` into `callgate_openmp`, with `-fopenmp` and the
/// OpenMP runtime (GCC's libgomp, or clang's libomp) when the compiler
/// supports them.
fn build_openmp(source: &Path) {
    if !source.exists() {
        return;
    }
    let mut build = cc::Build::new();
    build
        .file(source)
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-pthread")
        .opt_level(2)
        .warnings_into_errors(true);
    let openmp = build.is_flag_supported("-fopenmp").unwrap_or(false);
    if openmp {
        build.flag("-fopenmp");
    }
    build.compile("callgate_openmp");
    if openmp {
        let runtime = if build.get_compiler().is_like_clang() {
            "omp"
        } else {
            "gomp"
        };
        println!("cargo:rustc-link-lib={runtime}");
    }
}

fn build_host(compiler: &cc::Tool, source: &Path, hosts: &Path) {
    let name = source.file_stem().expect("file name");
    let output = hosts.join(name);
    let status = compiler
        .to_command()
        .args([
            "-O2",
            "-g",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pthread",
            "-Itests/c/include",
        ])
        .arg(source)
        .arg("-o")
        .arg(&output)
        .args(["-ldl", "-pthread"])
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling {} failed", source.display());
}

/// Links each of `LIBRARIES` that `pkg-config` knows, and sets its cfg.
fn link_libraries() {
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let ci = std::env::var("CI").is_ok_and(|value| value == "true");
    for (module, cfg, package) in LIBRARIES {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        let output = Command::new("pkg-config").args(["--libs", module]).output();
        let flags = match output {
            Ok(output) if output.status.success() => {
                String::from_utf8(output.stdout).expect("pkg-config prints its flags as text")
            }
            _ => {
                let message = format!(
                    "pkg-config does not find {module}: the tests that call it are left out \
                     (apt-get install {package} pkg-config)"
                );
                assert!(!ci, "{message}");
                println!("cargo:warning={message}");
                continue;
            }
        };
        for flag in flags.split_whitespace() {
            if let Some(dir) = flag.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            } else if let Some(library) = flag.strip_prefix("-l") {
                println!("cargo:rustc-link-lib={library}");
            }
        }
        println!("cargo:rustc-cfg={cfg}");
    }
}

/// Writes `$OUT_DIR/guide_pages.rs`: a unit struct per page that
/// `guide/src/SUMMARY.md` links, documented with the page's text.
fn guide_pages() {
    const SUMMARY: &str = "guide/src/SUMMARY.md";
    println!("cargo:rerun-if-changed=guide/src");
    let summary = std::fs::read_to_string(SUMMARY).expect("read guide/src/SUMMARY.md");
    let root = std::env::current_dir().expect("the package's directory");
    let mut items = String::new();
    for (index, page) in summary
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split_once(')'))
        .map(|(page, _)| page)
        .enumerate()
    {
        let path = root.join("guide/src").join(page);
        println!("cargo:rerun-if-changed={}", path.display());
        items.push_str(&format!(
            "#[doc = include_str!({:?})]\npub struct Page{index};\n",
            path.display().to_string()
        ));
    }
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("guide_pages.rs"), items).expect("write guide_pages.rs");
}
