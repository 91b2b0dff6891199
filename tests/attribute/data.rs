//! The data mappings of `#[c_callback]` in one process: the forms the C
//! program of `tests/hosts/data.rs` does not reach (`Option<&mut [T]>`,
//! `#[len] Option<&str>`, `#[len = n]` of other integer types, binary
//! `OutBuf`s, failures and panics of owned results), and the C idioms of a
//! size query and of freeing an owned array.

use core::ffi::{CStr, c_char};
use std::ffi::CString;

use callgate::{OutBuf, c_callback};
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn md_text_by_size_query(
        cb: unsafe extern "C" fn(i64, *mut c_char, usize) -> i64,
        value: i64,
    ) -> *mut c_char;
    fn md_sum_returned_bytes(
        cb: unsafe extern "C" fn(usize, *mut usize) -> *mut u8,
        release: unsafe extern "C" fn(*mut u8, usize),
        count: usize,
    ) -> i64;
}

fn last_error() -> String {
    callgate::last_error().unwrap_or_default()
}

callgate::export_free!(md_bytes_free: Vec<u8>);
callgate::export_free!(md_words_free: Box<[u32]>);
callgate::export_free!(md_name_free: CString);
callgate::export_free!(md_noisy_free: Box<Noisy>);

/// Doubles each element; -100 for `(NULL, 0)`.
#[c_callback(on_error = -1)]
fn double_all(values: Option<&mut [i32]>) -> i64 {
    let Some(values) = values else { return -100 };
    for value in values.iter_mut() {
        *value *= 2;
    }
    values.len() as i64
}

#[test]
fn optional_mutable_slices() {
    let mut values = [1, 2, 3];
    // SAFETY: `values` is valid for its length; NULL with 0 is allowed.
    unsafe {
        assert_eq!(double_all(values.as_mut_ptr(), 3), 3);
        assert_eq!(double_all(core::ptr::null_mut(), 0), -100);
        assert_eq!(double_all(values.as_mut_ptr(), 0), 0);
        assert_eq!(double_all(core::ptr::null_mut(), 1), -1);
    }
    assert_eq!(values, [2, 4, 6]);
    assert_eq!(
        last_error(),
        "argument `values` is NULL but its length is 1"
    );
}

/// The byte length of `text`, or -100 for `(NULL, 0)`.
#[c_callback(on_error = -1)]
fn optional_text(#[len] text: Option<&str>) -> i64 {
    text.map_or(-100, |text| text.len() as i64)
}

#[test]
fn optional_text_with_a_length() {
    let bytes = b"caf\xc3\xa9\0!";
    // SAFETY: `bytes` is valid for its length; NULL with 0 is allowed.
    unsafe {
        assert_eq!(optional_text(bytes.as_ptr().cast(), 7), 7);
        assert_eq!(optional_text(core::ptr::null(), 0), -100);
        assert_eq!(optional_text(bytes.as_ptr().cast(), 0), 0);
        assert_eq!(optional_text(bytes.as_ptr().cast(), 4), -1);
    }
    assert_eq!(
        last_error(),
        "argument `text` is not valid UTF-8 (invalid byte at offset 3)"
    );
}

/// The sum of `count` values, C's `(const uint16_t *values, int64_t count)`.
#[c_callback(on_error = -1)]
fn sum_counted(#[len = count] values: &[u16], count: i64) -> i64 {
    values.iter().map(|&value| i64::from(value)).sum()
}

#[test]
fn a_signed_length_parameter() {
    let values = [1_u16, 2, 3];
    // SAFETY: `values` holds at least `count` elements when count >= 0.
    unsafe {
        assert_eq!(sum_counted(values.as_ptr(), 2), 3);
        assert_eq!(sum_counted(values.as_ptr(), -7), -1);
    }
    assert_eq!(last_error(), "argument `count` is not a valid length: -7");
}

/// Writes `value` in decimal, snprintf style.
#[c_callback(on_error = -1)]
fn decimal(value: i64, mut out: OutBuf<'_, c_char>) -> i64 {
    write!(out, "{value}");
    out.required() as i64
}

#[test]
fn c_asks_for_the_size_then_for_the_text() {
    // SAFETY: `decimal` has the signature the C helper calls; the result
    // is a malloc()ed C string.
    unsafe {
        let text = md_text_by_size_query(decimal, -1_234_567);
        assert!(!text.is_null());
        assert_eq!(CStr::from_ptr(text), c"-1234567");
        libc::free(text.cast());
    }
}

/// Copies the low bytes of `values` into `out`, as many as fit.
#[c_callback(on_error = -1)]
fn low_bytes(values: &[u32], mut out: OutBuf<'_, u8>) -> i64 {
    for value in values {
        out.push(*value as u8);
    }
    out.written().len() as i64
}

#[test]
fn binary_buffers_are_filled_to_the_end() {
    let values = [0x101_u32, 0x202, 0x303];
    let mut out = [0xff_u8; 2];
    // SAFETY: both arrays are valid for their lengths.
    let written = unsafe { low_bytes(values.as_ptr(), 3, out.as_mut_ptr(), out.len()) };
    assert_eq!((written, out), (2, [1, 2]));
}

/// `count` bytes `0, 1, 2, …`; an error over 1000; a panic at 666.
#[c_callback(free = md_bytes_free)]
fn counting_bytes(count: usize) -> Result<Vec<u8>, String> {
    match count {
        666 => panic!("not this one"),
        1001.. => Err(format!("{count} is over 1000")),
        _ => Ok((0..count).map(|i| i as u8).collect()),
    }
}

#[test]
fn owned_arrays_fail_and_panic_to_null_and_length_0() {
    // SAFETY: the C helper frees what it gets with the matching function.
    unsafe {
        assert_eq!(md_sum_returned_bytes(counting_bytes, md_bytes_free, 4), 6);
        assert_eq!(md_sum_returned_bytes(counting_bytes, md_bytes_free, 0), 0);
        assert_eq!(
            md_sum_returned_bytes(counting_bytes, md_bytes_free, 2000),
            -1
        );
    }
    assert_eq!(last_error(), "2000 is over 1000");
    let mut len = 12;
    // SAFETY: a valid `size_t *`.
    assert!(unsafe { counting_bytes(666, &mut len) }.is_null());
    assert_eq!(len, 0);
    assert_eq!(
        last_error(),
        "callback `counting_bytes` panicked: not this one"
    );
}

/// `Some` for even `n`.
#[c_callback(free = md_words_free)]
fn maybe_words(n: u32) -> Option<Box<[u32]>> {
    n.is_multiple_of(2)
        .then(|| vec![n; n as usize].into_boxed_slice())
}

#[test]
fn optional_boxed_slices() {
    let mut len = 5;
    // SAFETY: a valid `size_t *`; what comes back is freed once.
    unsafe {
        assert!(maybe_words(3, &mut len).is_null());
        assert_eq!(len, 0);
        let words = maybe_words(4, &mut len);
        assert_eq!(core::slice::from_raw_parts(words, len), [4, 4, 4, 4]);
        md_words_free(words, len);
    }
}

#[test]
fn empty_arrays_come_back_as_null_and_length_0() {
    let mut len = 12;
    // SAFETY: a valid `size_t *`; what comes back is freed once.
    unsafe {
        let bytes = counting_bytes(0, &mut len);
        assert_eq!((bytes, len), (core::ptr::null_mut(), 0));
        md_bytes_free(bytes, len);
        len = 12;
        let words = maybe_words(0, &mut len);
        assert_eq!((words, len), (core::ptr::null_mut(), 0));
        md_words_free(words, len);
    }
}

/// A name, or an error for an empty request.
#[c_callback(free = md_name_free)]
fn name(#[len] prefix: &str) -> Result<CString, String> {
    if prefix.is_empty() {
        return Err("no prefix".to_owned());
    }
    CString::new(format!("{prefix}-name")).map_err(|error| error.to_string())
}

#[test]
fn owned_strings_and_their_errors() {
    // SAFETY: the prefix is valid for its length; the result is freed once.
    unsafe {
        let made = name(c"md".as_ptr(), 2);
        assert_eq!(CStr::from_ptr(made), c"md-name");
        md_name_free(made);
        assert!(name(core::ptr::null(), 0).is_null());
    }
    assert_eq!(last_error(), "no prefix");
}

/// A box whose `Drop` panics.
pub struct Noisy;

impl Drop for Noisy {
    fn drop(&mut self) {
        panic!("Noisy does not go quietly");
    }
}

#[c_callback(free = md_noisy_free)]
fn noisy() -> Box<Noisy> {
    Box::new(Noisy)
}

#[test]
fn a_panicking_drop_stays_in_the_free_function() {
    let value = noisy();
    assert!(!value.is_null());
    // SAFETY: `value` came from `noisy` and is freed once.
    unsafe { md_noisy_free(value) };
    // SAFETY: NULL is a no-op.
    unsafe { md_noisy_free(core::ptr::null_mut()) };
}
