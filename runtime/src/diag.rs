//! Diagnostics of last resort: a line on standard error, and aborting.
//!
//! The runtime reports only what nobody can be told otherwise (a panic in
//! `Local::release`, a malformed `CALLGATE`), and aborts only where going
//! on would unwind into C or break its invariants. Every layer may call
//! these; they call nothing else of the runtime.

use std::io::Write;

/// Writes one line to standard error, ignoring failures (there is nobody to
/// report them to).
pub(crate) fn report(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Writes `message` to standard error and aborts the process.
#[cold]
#[inline(never)]
pub(crate) fn abort_with(message: &str) -> ! {
    let _ = writeln!(std::io::stderr(), "{message}");
    std::process::abort()
}
