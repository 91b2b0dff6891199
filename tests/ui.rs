//! Compile-time behaviour of `#[c_callback]` and `#[callgate::init]`: every
//! rejected form has its own message at the offending tokens, and every option
//! and mapping compiles. Bless changed `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p callgate-dev --test ui` on the pinned
//! toolchain.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
