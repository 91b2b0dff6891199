use super::*;

fn message<T: core::fmt::Debug>(result: Result<T, Failure>) -> String {
    result.expect_err("a failure").message().to_owned()
}

#[test]
fn null_and_zero_is_empty_or_none() {
    // SAFETY: (NULL, 0) is always accepted.
    unsafe {
        assert_eq!(slice_arg::<u64>(core::ptr::null(), 0, "v").unwrap(), &[]);
        assert!(
            mut_slice_arg::<u64>(core::ptr::null_mut(), 0, "v")
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            opt_slice_arg::<u64>(core::ptr::null(), 0, "v").unwrap(),
            None
        );
        assert_eq!(str_len_arg(core::ptr::null(), 0, "s").unwrap(), "");
        assert_eq!(opt_str_len_arg(core::ptr::null(), 0, "s").unwrap(), None);
    }
}

#[test]
fn bad_pairs_are_failures_naming_the_argument() {
    // SAFETY: every pair is rejected before anything is read.
    unsafe {
        assert_eq!(
            message(slice_arg::<u8>(core::ptr::null(), 5, "data")),
            "argument `data` is NULL but its length is 5"
        );
        assert_eq!(
            message(opt_slice_arg::<u8>(core::ptr::null(), 5, "data")),
            "argument `data` is NULL but its length is 5"
        );
        let values = [0_u64; 2];
        let odd = values.as_ptr().cast::<u8>().wrapping_add(1).cast::<u64>();
        assert_eq!(
            message(slice_arg(odd, 1, "values")),
            "argument `values` is not aligned to 8 bytes"
        );
        assert_eq!(
            message(slice_arg(values.as_ptr(), usize::MAX / 4, "values")),
            format!(
                "argument `values` is too long: {} elements of 8 bytes do not fit in the \
                 address space",
                usize::MAX / 4
            )
        );
        // Fits in isize but runs past the end of the address space.
        let high = core::ptr::without_provenance::<u8>(usize::MAX - 3);
        assert!(message(slice_arg(high, 8, "high")).contains("too long"));
    }
    assert_eq!(
        len_arg(-1_i32, "count").unwrap_err().message(),
        "argument `count` is not a valid length: -1"
    );
    assert_eq!(len_arg(7_u32, "count").unwrap(), 7);
}

#[test]
fn zero_sized_elements_take_any_length() {
    let unit = [(); 0];
    // SAFETY: zero-sized elements occupy no memory.
    let units = unsafe { slice_arg(unit.as_ptr(), usize::MAX, "units") }.unwrap();
    assert_eq!(units.len(), usize::MAX);
}

#[test]
fn strings_with_a_length_may_hold_nul_and_must_be_utf8() {
    let text = b"a\0b\xc3\xa9";
    // SAFETY: `text` is valid for its length.
    unsafe {
        assert_eq!(
            str_len_arg(text.as_ptr().cast(), 5, "text").unwrap(),
            "a\0bé"
        );
        assert_eq!(
            message(str_len_arg(text.as_ptr().cast(), 4, "text")),
            "argument `text` is not valid UTF-8 (invalid byte at offset 3)"
        );
    }
}
