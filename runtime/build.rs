//! Sets `cfg(callgate_cold_path)` when the compiler has
//! `core::hint::cold_path` (stable since Rust 1.95): the `#[local]` fast
//! path then keeps its rare branch out of line. Older compilers (down to
//! the crate's `rust-version`) build the same code without the hint.

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
    if rustc_minor().is_some_and(|minor| minor >= 95) {
        println!("cargo:rustc-cfg=callgate_cold_path");
    }
}

/// The minor version of the compiler cargo builds with (`1.N.x`), or
/// `None` if it cannot be read, which leaves the hint out.
fn rustc_minor() -> Option<u32> {
    let rustc = env::var_os("RUSTC")?;
    let output = Command::new(rustc).arg("--version").output().ok()?;
    let version = String::from_utf8(output.stdout).ok()?;
    // "rustc 1.95.0 (59807616e 2026-04-14)", or "rustc 1.96.0-nightly (…)".
    let mut numbers = version.split_whitespace().nth(1)?.split('.');
    if numbers.next()? != "1" {
        return None;
    }
    numbers.next()?.parse().ok()
}
