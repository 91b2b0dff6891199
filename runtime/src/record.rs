//! Declaration records the compiler finishes: a `#[derive(CEnum)]` enum's
//! record holds its discriminants and a `#[derive(CValue)]` struct's the
//! lengths of its arrays, values the derive sees only as expressions. The
//! derive writes the record as pieces of text and integers; these `const
//! fn`s write it out, the integers in decimal, for the `DeclNote` static.

/// A piece of a declaration record.
pub enum RecordPiece {
    /// Bytes as they are.
    Text(&'static [u8]),
    /// An integer, written in decimal.
    Int(i128),
}

/// The length of the record `pieces` make, padded with NULs to a multiple
/// of 4 bytes (a note descriptor's alignment).
#[must_use]
pub const fn record_len(pieces: &[RecordPiece]) -> usize {
    let mut len = 0;
    let mut index = 0;
    while index < pieces.len() {
        len += match pieces[index] {
            RecordPiece::Text(bytes) => bytes.len(),
            RecordPiece::Int(value) => decimal_len(value),
        };
        index += 1;
    }
    len.div_ceil(4) * 4
}

/// The record `pieces` make, NUL-padded to `N` bytes.
///
/// # Panics
///
/// At compile time, when `N` is less than the record's length (the derive
/// passes [`record_len`]).
#[must_use]
pub const fn record_bytes<const N: usize>(pieces: &[RecordPiece]) -> [u8; N] {
    let mut out = [0; N];
    let mut at = 0;
    let mut index = 0;
    while index < pieces.len() {
        match pieces[index] {
            RecordPiece::Text(bytes) => {
                let mut byte = 0;
                while byte < bytes.len() {
                    out[at] = bytes[byte];
                    at += 1;
                    byte += 1;
                }
            }
            RecordPiece::Int(value) => {
                let len = decimal_len(value);
                if value < 0 {
                    out[at] = b'-';
                }
                let mut rest = value.unsigned_abs();
                let mut digit = at + len;
                loop {
                    digit -= 1;
                    out[digit] = b'0' + (rest % 10) as u8;
                    rest /= 10;
                    if rest == 0 {
                        break;
                    }
                }
                at += len;
            }
        }
        index += 1;
    }
    out
}

/// The number of bytes of `value` in decimal, its sign included.
const fn decimal_len(value: i128) -> usize {
    let mut len = if value < 0 { 2 } else { 1 };
    let mut rest = value.unsigned_abs() / 10;
    while rest > 0 {
        len += 1;
        rest /= 10;
    }
    len
}

#[cfg(test)]
mod tests;
