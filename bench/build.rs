//! Compiles the C side of the benchmark, `c/bench.c`, into the static
//! library `callgate_bench_harness` linked into `callgate-bench`: pthreads
//! that call a Rust callback through a `volatile` function pointer and time
//! themselves. Compiled with `-O2 -Wall -Wextra -Werror`.

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
