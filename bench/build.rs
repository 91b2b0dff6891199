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
}
