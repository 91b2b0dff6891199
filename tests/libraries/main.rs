//! Real C libraries calling Rust: SQLite, libuv, glib and Lua 5.4 call
//! Rust callbacks, from their own threads where they have them. One module
//! per library, left out when the dev package's build script does not find
//! the library with `pkg-config` (`cfg(callgate_sqlite)`,
//! `cfg(callgate_libuv)`, `cfg(callgate_glib)`, `cfg(callgate_lua)`).
//! Tests that read the process's `stats()` or change its settings run their
//! body in a child process of their own (`child`, shared with
//! `tests/runtime`).

// Links the libraries (the dev package's build script finds them with
// pkg-config).
use callgate_dev as _;

#[cfg(any(callgate_sqlite, callgate_libuv, callgate_glib))]
#[path = "../runtime/child.rs"]
mod child;

#[cfg(callgate_glib)]
mod glib;
#[cfg(callgate_lua)]
mod lua;
#[cfg(callgate_sqlite)]
mod sqlite;
#[cfg(callgate_libuv)]
mod uv;
