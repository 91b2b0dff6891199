use super::*;

#[test]
fn integers_are_written_in_decimal() {
    const PIECES: &[RecordPiece] = &[
        RecordPiece::Text(b"A="),
        RecordPiece::Int(-180),
        RecordPiece::Text(b" B="),
        RecordPiece::Int(0),
        RecordPiece::Text(b" C="),
        RecordPiece::Int(u64::MAX as i128),
        RecordPiece::Text(b" D="),
        RecordPiece::Int(i128::MIN),
    ];
    const LEN: usize = record_len(PIECES);
    const BYTES: [u8; LEN] = record_bytes(PIECES);
    let text = "A=-180 B=0 C=18446744073709551615 D=-170141183460469231731687303715884105728";
    assert_eq!(LEN, text.len().div_ceil(4) * 4);
    assert_eq!(&BYTES[..text.len()], text.as_bytes());
    assert!(BYTES[text.len()..].iter().all(|&byte| byte == 0));
}
