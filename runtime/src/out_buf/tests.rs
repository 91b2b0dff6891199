use super::*;
use core::ffi::CStr;

fn text(buf: &[c_char]) -> &CStr {
    CStr::from_bytes_until_nul(
        // SAFETY: `c_char` and `u8` have one layout.
        unsafe { core::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len()) },
    )
    .expect("NUL-terminated")
}

#[test]
fn text_is_cut_like_snprintf_and_stays_terminated() {
    let mut buf = [b'x' as c_char; 6];
    // SAFETY: `buf` is valid for its length.
    let mut out = unsafe { out_text_arg(buf.as_mut_ptr(), buf.len(), "out") }.unwrap();
    assert_eq!(out.required(), 0);
    let suffix = "ab";
    write!(out, "{}-{suffix}", 12);
    assert_eq!((out.required(), out.is_truncated()), (5, false));
    out.write_str("cdef");
    assert_eq!((out.required(), out.is_truncated()), (9, true));
    assert_eq!(out.written().len(), 5);
    assert_eq!(text(&buf), c"12-ab");
}

#[test]
fn an_empty_text_buffer_is_a_nul() {
    let mut buf = [b'x' as c_char; 3];
    // SAFETY: `buf` is valid for its length.
    let out = unsafe { out_text_arg(buf.as_mut_ptr(), 3, "out") }.unwrap();
    assert_eq!(out.capacity(), 3);
    assert_eq!(text(&buf), c"");
}

#[test]
fn null_and_zero_only_counts() {
    // SAFETY: (NULL, 0) is a buffer of capacity 0.
    let mut out = unsafe { out_text_arg(core::ptr::null_mut(), 0, "out") }.unwrap();
    write!(out, "{}", 123_456);
    assert_eq!((out.capacity(), out.required()), (0, 6));
    // SAFETY: as above.
    let mut out = unsafe { out_buf_arg::<u64>(core::ptr::null_mut(), 0, "out") }.unwrap();
    out.push(1);
    assert_eq!((out.written(), out.required()), (&[][..], 1));
    // SAFETY: rejected before anything is written.
    let error = unsafe { out_buf_arg::<u64>(core::ptr::null_mut(), 2, "out") }.unwrap_err();
    assert_eq!(
        error.message(),
        "argument `out` is NULL but its length is 2"
    );
}

#[test]
fn text_written_to_an_element_buffer_is_terminated_too() {
    let mut buf = [b'x' as c_char; 4];
    // SAFETY: `buf` is valid for its length.
    let mut out = unsafe { out_buf_arg(buf.as_mut_ptr(), buf.len(), "out") }.unwrap();
    out.extend_from_slice(&[b'a' as c_char; 4]);
    out.write_str("bc");
    assert_eq!((out.written().len(), out.required()), (3, 6));
    assert_eq!(text(&buf), c"aaa");
}

#[test]
fn elements_fill_the_whole_buffer() {
    let mut buf = [0_u32; 3];
    // SAFETY: `buf` is valid for its length.
    let mut out = unsafe { out_buf_arg(buf.as_mut_ptr(), 3, "out") }.unwrap();
    out.extend_from_slice(&[1, 2]);
    out.push(3);
    out.push(4);
    assert_eq!(out.written(), [1, 2, 3]);
    assert_eq!((out.required(), out.is_truncated()), (4, true));
    assert_eq!(buf, [1, 2, 3]);
}
