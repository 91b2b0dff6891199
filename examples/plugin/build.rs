//! Compiles `host.c`, the C program that loads the plugin, into
//! `$OUT_DIR/host` with warnings as errors; the `plugin-host` binary runs it.
//! It is a separate program: it loads the library with `dlopen` and does not
//! link it.

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=host.c");
    println!("cargo:rerun-if-changed=include/plugin.h");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let host = out.join("host");
    let compiler = cc::Build::new().get_compiler();
    let status = compiler
        .to_command()
        .args([
            "-O2",
            "-g",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-Iinclude",
            "host.c",
        ])
        .arg("-o")
        .arg(&host)
        .arg("-ldl")
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "compiling host.c failed");
    println!("cargo:rustc-env=PLUGIN_HOST_C={}", host.display());
}
