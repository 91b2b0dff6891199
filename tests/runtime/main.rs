//! The runtime's in-process tests: closures, panics, thread contexts, the
//! environment and `fork`, driven from Rust and the C harness
//! (`tests/c/*.c`). One module per topic. Tests that depend on state the
//! whole process shares run in a child process of their own (`child`).
//!
//! The gate's tests are binaries of their own (`tests/gate*.rs`,
//! `tests/macros_*.rs`): each declares its own `#[callgate::init]`
//! functions, which every test of a binary would see.

mod child;

mod closures;
mod env;
mod fork_closure;
mod fork_closure_contended;
mod fork_in_release;
mod panics;
mod threads;
