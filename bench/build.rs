//! Compiles the C side of the benchmark, `c/bench.c`, into the static
//! library `callgate_bench_harness` linked into `callgate-bench`: pthreads
//! that call a Rust callback through a `volatile` function pointer and time
//! themselves. Compiled with `-O2 -Wall -Wextra -Werror`.
//!
//! On x86-64 Linux it also builds `c/tls_read.c` into a shared library of
//! its own, the floors of a call and of a thread's first call in dynamic
//! TLS (a thread-local read through a TLS descriptor, and `c/c_bind.h`'s
//! first-call work with its slot there), and hands its path to the
//! benchmark as `CALLGATE_BENCH_TLS_READ`.

fn main() {
    println!("cargo:rerun-if-changed=c");
    cc::Build::new()
        .file("c/bench.c")
        .flag("-Wall")
        .flag("-Wextra")
        .flag("-pthread")
        .opt_level(2)
        .warnings_into_errors(true)
        .compile("callgate_bench_harness");
    println!("cargo:rustc-link-lib=pthread");
    tls_read_library();
    // The compiler's version, for the report's account of the run.
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map_or_else(|| "an unknown rustc".to_owned(), |v| v.trim().to_owned());
    println!("cargo:rustc-env=CALLGATE_BENCH_RUSTC={version}");
}

/// `c/tls_read.c` as a shared library in `OUT_DIR`, where the target reads
/// thread-locals through TLS descriptors on request (x86-64 Linux); its
/// path in `CALLGATE_BENCH_TLS_READ` (empty elsewhere: the benchmark skips
/// the row).
fn tls_read_library() {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if arch != "x86_64" || os != "linux" {
        println!("cargo:rustc-env=CALLGATE_BENCH_TLS_READ=");
        return;
    }
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let library = out.join("libcallgate_bench_tls_read.so");
    let status = cc::Build::new()
        .get_compiler()
        .to_command()
        .args([
            "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared", "-pthread",
        ])
        .arg("-mtls-dialect=gnu2")
        .arg("-o")
        .arg(&library)
        .arg("c/tls_read.c")
        .status()
        .expect("cannot run the C compiler");
    assert!(status.success(), "c/tls_read.c did not build");
    println!(
        "cargo:rustc-env=CALLGATE_BENCH_TLS_READ={}",
        library.display()
    );
}
