//! Layout hints for the compiler.

/// Marks the branch it is written in as rarely taken, where the compiler
/// can (`cfg(callgate_cold_path)`, set by the build script): the code
/// after the branch then falls through, and the branch is laid out of
/// line.
///
/// Expanded where it is written, unlike [`rarely_taken`]: a call of that
/// function reaches the compiler's layout only where the function was
/// inlined early enough (at the MIR level), which a generic function
/// inlined into a trampoline does not always get. Where the hint matters
/// to a fast path's layout, this form is used.
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
