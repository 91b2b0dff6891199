use super::*;

#[test]
fn lists_few_values() {
    let failure = not_a_variant("mode", "Mode", 7, &[0, 1, 4]);
    assert_eq!(
        failure.message(),
        "argument `mode` is 7, which is not a `Mode` (expected 0, 1 or 4)"
    );
    let failure = not_a_variant("level", "Level", -1, &[3]);
    assert_eq!(
        failure.message(),
        "argument `level` is -1, which is not a `Level` (expected 3)"
    );
}

#[test]
fn counts_many_values() {
    let valid: Vec<u8> = (0..9).collect();
    let failure = not_a_variant("byte", "Byte", 255, &valid);
    assert_eq!(
        failure.message(),
        "argument `byte` is 255, which is not a `Byte` (expected one of its 9 values)"
    );
}

#[test]
fn c_values_are_their_own_raw() {
    let value = <Option<NonZeroU32> as CArg>::from_c(None, "count");
    assert!(matches!(value, Ok(None)));
    let value = <i32 as CArg>::from_c(-5, "x");
    assert!(matches!(value, Ok(-5)));
}
