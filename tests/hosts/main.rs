//! The C-host tests: C (and C++) programs of `tests/c/hosts` and
//! `tests/c/linked` drive the fixture library (`tests/fixture`), which they
//! load with `dlopen` or link, from threads they create; each test checks
//! the program's exit status and output. One module per host.
//!
//! The test matrix (`cargo xtask test`) runs them against several builds
//! of the fixture: the debug and release profiles, dynamic TLS, edition
//! 2021, fat LTO, a staticlib, opt-level "s" and "z", musl and aarch64.

mod host;

mod abandon;
mod bad_input;
mod callbacks;
mod churn;
mod data;
mod depth;
mod dlclose;
mod fork;
mod header;
mod init_background;
mod plugins;
mod signals;
mod teardown;
mod unwind;
mod values;
