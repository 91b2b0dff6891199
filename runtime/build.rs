//! Sets `cfg(callgate_cold_path)` when the compiler has
//! `core::hint::cold_path` (stable since Rust 1.95): the `#[local]` fast
//! path then keeps its rare branch out of line. Older compilers (down to
//! the crate's `rust-version`) build the same code without the hint.
//!
//! Sets `cfg(callgate_unoptimized)` in a `dev` build, or at
//! `opt-level = 0`: the call path's functions are then not
//! `#[inline(always)]`. Unoptimised code gives every local of
//! every inlined function a stack slot of its own for the whole call, so
//! inlining them all would make each nested callback's frame several
//! times larger (the guide's Guarantees page gives the stack a level
//! takes).

use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC");
    if rustc_minor().is_some_and(|minor| minor >= 95) {
        println!("cargo:rustc-cfg=callgate_cold_path");
    }
    // Cargo sets `OPT_LEVEL` to the level this crate is built at ("0" to
    // "3", "s" or "z"), and `PROFILE` to "debug" for a profile that
    // inherits from `dev`. The call path is generic and inline, so it is
    // compiled in the user's crate, at the user's level: in a `dev` build
    // that is 0 even where callgate itself is optimised
    // (`[profile.dev.package."*"] opt-level = 3`).
    let unoptimized = env::var_os("OPT_LEVEL").is_some_and(|level| level == "0")
        || env::var_os("PROFILE").is_some_and(|profile| profile == "debug");
    if unoptimized {
        println!("cargo:rustc-cfg=callgate_unoptimized");
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
