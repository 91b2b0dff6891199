use super::*;

fn bytes(start: usize, len: usize, writable: bool, name: &'static str) -> Region {
    Region {
        start,
        len,
        writable,
        name,
    }
}

#[test]
fn overlapping_writes_fail() {
    let message = |regions: &[Region]| {
        check_disjoint(regions)
            .map(|()| String::new())
            .unwrap_or_else(|failure| failure.message().to_owned())
    };
    // Shared reads may overlap.
    assert_eq!(
        message(&[bytes(100, 8, false, "a"), bytes(104, 8, false, "b")]),
        ""
    );
    // Adjacent ranges do not overlap; empty ones never do.
    assert_eq!(
        message(&[bytes(100, 8, true, "a"), bytes(108, 8, true, "b")]),
        ""
    );
    assert_eq!(
        message(&[bytes(100, 0, true, "a"), bytes(100, 8, true, "b")]),
        ""
    );
    assert_eq!(
        message(&[bytes(100, 8, false, "src"), bytes(107, 8, true, "dst")]),
        "arguments `src` and `dst` overlap, and the callback writes `dst`: pass separate \
         memory (a callback that works in place takes one `&mut` argument, or raw pointers)"
    );
    assert!(
        message(&[
            bytes(0, 4, false, "x"),
            bytes(200, 4, true, "out"),
            bytes(usize::MAX - 3, 8, false, "end"),
            bytes(202, 1, false, "inside")
        ])
        .starts_with("arguments `out` and `inside` overlap")
    );
}

#[test]
fn regions_from_pointers() {
    let values = [0u32; 4];
    let region = Region::values(values.as_ptr(), 4, false, "values");
    assert_eq!((region.start, region.len), (values.as_ptr().addr(), 16));
    let null = Region::values(core::ptr::null::<u64>(), 9, true, "none");
    assert_eq!(null.len, 0);
    let huge = Region::values(values.as_ptr(), usize::MAX / 2, true, "huge");
    assert_eq!(huge.len, 0);
    // SAFETY: a NUL-terminated string, and NULL.
    let (text, none) = unsafe {
        (
            Region::c_string(c"abc".as_ptr(), "text"),
            Region::c_string(core::ptr::null(), "none"),
        )
    };
    assert_eq!((text.len, none.len), (4, 0));
}
