//! The runtime's in-process tests: closures, panics, thread contexts, the
//! environment and `fork`, driven from Rust and the C harness
//! (`tests/c/*.c`). One module per topic. Tests that depend on state the
//! whole process shares run in a child process of their own (`child`).
//!
//! The init gate's tests are a binary of their own (`tests/gate`), and
//! the `#[callgate::init]` tests one binary each (`tests/macros_*.rs`):
//! each of those declares its own `#[callgate::init]` functions, which
//! every test of a binary would see.

mod child;

mod closures;
mod env;
mod fork_closure;
mod fork_closure_contended;
mod fork_in_release;
mod panics;
mod threads;
