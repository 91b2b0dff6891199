use super::*;

#[test]
fn strings_boxes_and_arrays_round_trip() {
    let raw = owned_value(CString::new("hello").unwrap());
    // SAFETY: `raw` came from `owned_value`.
    unsafe { free_value::<CString>(raw, "string_free") };
    assert!(owned_value(None::<Box<u32>>).is_null());
    // SAFETY: NULL is a no-op.
    unsafe { free_value::<Box<u32>>(core::ptr::null_mut(), "box_free") };

    let mut len = 99;
    let ptr = owned_slice(vec![1_u16, 2, 3], &mut len);
    assert_eq!(len, 3);
    // SAFETY: `(ptr, len)` came from `owned_slice`.
    unsafe {
        assert_eq!(*ptr.add(2), 3);
        free_slice(ptr, len, "array_free");
    }
    let ptr = owned_slice(None::<Vec<u8>>, &mut len);
    assert_eq!((ptr.is_null(), len), (true, 0));
    len = 99;
    let ptr = owned_slice(Vec::<u64>::new().into_boxed_slice(), &mut len);
    assert_eq!((ptr.is_null(), len), (true, 0));
    // SAFETY: as above.
    unsafe { free_slice(ptr, len, "array_free") };
    len = 99;
    let ptr = owned_slice(Vec::<String>::with_capacity(8), &mut len);
    assert_eq!((ptr.is_null(), len), (true, 0));
}

#[test]
fn a_panicking_drop_stays_in_the_free_function() {
    struct Explodes;
    impl Drop for Explodes {
        fn drop(&mut self) {
            panic!("boom");
        }
    }
    let raw = owned_value(Box::new(Explodes));
    // SAFETY: `raw` came from `owned_value`.
    unsafe { free_value::<Box<Explodes>>(raw, "explodes_free") };
}

#[test]
fn result_len_is_zero_until_set() {
    let mut len = 7_usize;
    // SAFETY: a valid `usize`.
    let slot = unsafe { result_len_arg(&mut len, "result_len") }.unwrap();
    assert_eq!(*slot, 0);
    let mut len = 7_usize;
    // SAFETY: a valid `usize`, and NULL.
    unsafe {
        clear_result_len(&mut len);
        clear_result_len(core::ptr::null_mut());
    }
    assert_eq!(len, 0);
}
