//! Layout hints for the compiler.

/// Marks the branch it is written in as rarely taken, where the compiler
/// can (`cfg(callgate_cold_path)`, set by the build script), so the branch
/// is laid out of line.
///
/// A macro, for a fast path's layout: a call of [`rarely_taken`] reaches
/// the layout only where it was inlined early enough (at the MIR level).
macro_rules! rarely_taken_here {
    () => {
        #[cfg(callgate_cold_path)]
        #[allow(
            clippy::incompatible_msrv,
            reason = "compiled only where the compiler has it (build script)"
        )]
        core::hint::cold_path();
    };
}
#[allow(
    unused_imports,
    reason = "used where the slot has a static TLS offset (x86-64 glibc Linux)"
)]
pub(crate) use rarely_taken_here;

/// [`rarely_taken_here!`] as a function.
#[hot_path]
pub(crate) fn rarely_taken() {
    rarely_taken_here!();
}
