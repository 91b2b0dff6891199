//! Parameters passed by value that C may pass invalid, from a C program
//! compiled against the generated header (`tests/c/linked/values.c`):
//! `#[derive(CEnum)]` enums checked at every call, a `#[derive(CValue)]`
//! struct both ways.

use crate::host;

use std::time::Duration;

/// Every `Turn` (`#[repr(i32)]`: -180, -90, 0, 90, 270) and `Tier`
/// (`#[repr(u8)]`: 1, 2, 200) arrives as its variant; 7, -1, neighbours of
/// the variants, `INT_MIN` and `INT_MAX`, and 0, 3, 199, 201 and 255 for
/// the byte, return the fallback with a last error naming the argument and
/// the value; a `Pair` goes both ways by value. 43 checks, all made by the
/// program.
#[test]
fn enums_are_checked_and_structs_pass_from_c() {
    let outcome = host::run(&mut host::linked("values"), Duration::from_secs(60));
    outcome.assert_ok();
    assert_eq!(outcome.number("checks"), 43.0);
}
