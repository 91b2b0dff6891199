//! Parameters passed by value that C may pass invalid: `#[derive(CEnum)]`
//! enums arrive as their repr's integer and are checked at every call,
//! `#[derive(CValue)]` structs arrive as they are. Called the way C calls
//! them, through the trampolines' C signatures.

use core::ffi::c_int;

use callgate::__private::CArg;
use callgate::c_callback;

/// Negative, zero and positive discriminants, not contiguous.
#[derive(Clone, Copy, Debug, PartialEq, callgate::CEnum)]
#[repr(i32)]
enum Turn {
    Back = -180,
    Left = -90,
    Ahead = 0,
    Right = 90,
}

/// Implicit discriminants after an explicit one.
#[derive(Clone, Copy, Debug, PartialEq, callgate::CEnum)]
#[repr(u8)]
enum Tier {
    Bronze = 1,
    Silver,
    Gold = 200,
}

/// C's `int`.
#[derive(Clone, Copy, Debug, PartialEq, callgate::CEnum)]
#[repr(C)]
enum Flag {
    Off,
    On,
}

/// More variants than the message lists.
#[derive(Clone, Copy, Debug, PartialEq, callgate::CEnum)]
#[repr(u16)]
enum Digit {
    D0,
    D1,
    D2,
    D3,
    D4,
    D5,
    D6,
    D7,
    D8,
    D9,
}

#[derive(Clone, Copy, Debug, PartialEq, callgate::CValue)]
#[repr(C)]
struct Span {
    start: u32,
    len: u32,
    weight: f64,
    valid: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, callgate::CValue)]
#[repr(transparent)]
struct Meters(f32);

#[c_callback(on_error = -1)]
fn turn_code(turn: Turn) -> i32 {
    match turn {
        Turn::Back => 1,
        Turn::Left => 2,
        Turn::Ahead => 3,
        Turn::Right => 4,
    }
}

#[c_callback(on_error = 0)]
fn tier_rank(first: u8, tier: Tier) -> u32 {
    u32::from(first) * 1000 + tier as u32
}

#[c_callback(on_error = -1)]
fn flag_value(flag: Flag) -> c_int {
    flag as c_int
}

#[c_callback(on_error = -1)]
fn digit_value(digit: Digit) -> i32 {
    digit as i32
}

#[c_callback(on_panic = Span { start: 0, len: 0, weight: 0.0, valid: false })]
fn widen(span: Span, by: Meters) -> Span {
    Span {
        start: span.start.saturating_sub(1),
        len: span.len + 2,
        weight: span.weight * f64::from(by.0),
        valid: !span.valid,
    }
}

fn last_error() -> String {
    callgate::last_error().unwrap_or_default()
}

#[test]
fn every_variant_arrives() {
    callgate::clear_last_error();
    for (raw, code) in [(-180, 1), (-90, 2), (0, 3), (90, 4)] {
        assert_eq!(turn_code(raw), code, "{}", last_error());
    }
    assert_eq!(tier_rank(7, 1), 7001);
    assert_eq!(tier_rank(7, 2), 7002);
    assert_eq!(tier_rank(7, 200), 7200);
    assert_eq!(flag_value(0), 0);
    assert_eq!(flag_value(1), 1);
    assert_eq!(digit_value(9), 9);
    assert_eq!(callgate::last_error(), None);
}

#[test]
fn other_values_return_the_fallback() {
    for raw in [7, -1, 1, 89, 91, -179, 180, i32::MIN, i32::MAX] {
        assert_eq!(turn_code(raw), -1, "{raw}");
        assert_eq!(
            last_error(),
            format!(
                "argument `turn` is {raw}, which is not a `Turn` (expected -180, -90, 0 or 90)"
            )
        );
    }
    for raw in [0, 3, 199, 201, 255] {
        assert_eq!(tier_rank(7, raw), 0, "{raw}");
        assert_eq!(
            last_error(),
            format!("argument `tier` is {raw}, which is not a `Tier` (expected 1, 2 or 200)")
        );
    }
    assert_eq!(flag_value(2), -1);
    assert_eq!(
        last_error(),
        "argument `flag` is 2, which is not a `Flag` (expected 0 or 1)"
    );
    assert_eq!(digit_value(10), -1);
    assert_eq!(
        last_error(),
        "argument `digit` is 10, which is not a `Digit` (expected one of its 10 values)"
    );
}

#[test]
fn conversion_without_a_trampoline() {
    assert_eq!(<Turn as CArg>::from_c(-90, "turn").ok(), Some(Turn::Left));
    assert_eq!(<Tier as CArg>::from_c(2, "tier").ok(), Some(Tier::Silver));
    let failure = <Tier as CArg>::from_c(u8::MAX, "tier")
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        failure.message(),
        "argument `tier` is 255, which is not a `Tier` (expected 1, 2 or 200)"
    );
    assert_eq!(<Span as CArg>::from_c(span(), "span").ok(), Some(span()));
}

fn span() -> Span {
    Span {
        start: 10,
        len: 4,
        weight: 0.5,
        valid: true,
    }
}

#[test]
fn structs_arrive_as_they_are() {
    assert_eq!(
        widen(span(), Meters(3.0)),
        Span {
            start: 9,
            len: 6,
            weight: 1.5,
            valid: false
        }
    );
}

// Behind a pointer C may have stored any integer of the enum's repr: each
// value is checked before the body reads it.

#[c_callback(on_error = -1)]
fn turn_behind(turn: &Turn) -> i32 {
    turn_of(*turn)
}

#[c_callback(on_error = -1)]
fn turns_total(turns: &[Turn]) -> i32 {
    turns.iter().map(|turn| turn_of(*turn)).sum()
}

#[c_callback(on_error = -1)]
fn flag_toggle(flag: &mut Flag) -> i32 {
    *flag = if *flag == Flag::On {
        Flag::Off
    } else {
        Flag::On
    };
    *flag as i32
}

#[c_callback(on_error = 0)]
fn tier_or_zero(tier: Option<&Tier>) -> u32 {
    tier.map_or(0, |tier| *tier as u32)
}

fn turn_of(turn: Turn) -> i32 {
    turn as i32
}

/// What C passes: a pointer to integers, some of which are no variant.
fn as_turns(raw: &[i32]) -> *const Turn {
    raw.as_ptr().cast()
}

#[test]
fn values_behind_pointers_are_checked() {
    callgate::clear_last_error();
    // SAFETY: each pointer is valid for the call (a C caller's
    // obligation); the values are what C may have stored.
    unsafe {
        assert_eq!(turn_behind(as_turns(&[90])), 90);
        assert_eq!(turn_behind(as_turns(&[91])), -1);
        assert_eq!(
            last_error(),
            "argument `turn` is 91, which is not a `Turn` (expected -180, -90, 0 or 90), \
             behind the pointer C passed"
        );

        assert_eq!(turns_total(as_turns(&[0, 90, -90, -180]), 4), -180);
        assert_eq!(turns_total(as_turns(&[0, 90, 5, -180]), 4), -1);
        assert_eq!(
            last_error(),
            "argument `turns` is 5, which is not a `Turn` (expected -180, -90, 0 or 90), \
             at index 2 of the array C passed"
        );
        // Only the `len` values C passed are read.
        assert_eq!(turns_total(as_turns(&[90, 7]), 1), 90);

        let mut flag = 1i32;
        assert_eq!(flag_toggle((&raw mut flag).cast()), 0);
        assert_eq!(flag, 0);
        let mut flag = 3i32;
        assert_eq!(flag_toggle((&raw mut flag).cast()), -1);
        assert_eq!(flag, 3, "an invalid value is left as C stored it");
        assert_eq!(
            last_error(),
            "argument `flag` is 3, which is not a `Flag` (expected 0 or 1), behind the pointer \
             C passed"
        );

        let tier = 200u8;
        assert_eq!(tier_or_zero((&raw const tier).cast()), 200);
        assert_eq!(tier_or_zero(core::ptr::null()), 0);
        let tier = 4u8;
        assert_eq!(tier_or_zero((&raw const tier).cast()), 0);
        assert_eq!(
            last_error(),
            "argument `tier` is 4, which is not a `Tier` (expected 1, 2 or 200), behind the \
             pointer C passed"
        );
    }
}
