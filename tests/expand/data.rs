// The expansion snapshot of the data mappings: slices as (pointer, length),
// a `#[len = other]` length, a `#[len] &str`, an `OutBuf`, and owned results
// with their free functions. `data.expanded.rs` beside it is what the
// macros make of it (checked by callgate-macros' unit tests).

use callgate::{OutBuf, c_callback};
use std::ffi::{CString, c_char};

callgate::export_free!(pub data_string_free: CString);
callgate::export_free!(pub data_bytes_free: Vec<u8>);

/// Scales `values` into `out` (`count` of each) and describes them.
#[c_callback(on_error = -1)]
pub fn scale(
    #[len = count] values: &[f64],
    #[len = count] out: &mut [f64],
    count: u32,
    #[len] unit: Option<&str>,
    mut text: OutBuf<'_, c_char>,
) -> i64 {
    for (out, value) in out.iter_mut().zip(values) {
        *out = value * 2.0;
    }
    write!(text, "{} {}", values.len(), unit.unwrap_or(""));
    text.required() as i64
}

/// `name`, owned by C until it frees it.
#[c_callback(free = data_string_free)]
pub fn name(bytes: &[u8]) -> Option<CString> {
    CString::new(bytes).ok()
}

/// `count` copies of `byte`, owned by C until it frees them.
#[c_callback(free = data_bytes_free, on_panic = abort)]
pub fn repeat(byte: u8, count: usize) -> Vec<u8> {
    vec![byte; count]
}
