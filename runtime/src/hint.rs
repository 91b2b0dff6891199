//! Layout hints for the compiler.

/// Marks the branch it is in as rarely taken, where the compiler can
/// (`cfg(callgate_cold_path)`, set by the build script): the code after
/// the branch then falls through, and the branch is laid out of line.
#[inline(always)]
pub(crate) fn rarely_taken() {
    #[cfg(callgate_cold_path)]
    #[allow(
        clippy::incompatible_msrv,
        reason = "compiled only where the compiler has it (build script)"
    )]
    core::hint::cold_path();
}
