//! The init gate driven by hand (`callgate::__private::run_init`): callers
//! wait for a slow init, a failed init fails every call, `fork` while an
//! init is pending, a long wait says so. One module per scenario. The gate
//! is process-wide, so every test runs its body in a child process of its
//! own (`child`, shared with `tests/runtime`).

#[path = "../runtime/child.rs"]
mod child;

mod failed;
mod fork;
mod fork_background;
mod fork_contended;
mod fork_foreground;
mod long_wait;
mod slow_init;
