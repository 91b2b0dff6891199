//! `#[c_callback]` parameter and return mappings, driven from C: NULL for each
//! reference kind, invalid UTF-8, `Err`, panics, and a `local` comparator
//! handed to libc's `qsort`.

use core::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;

use callgate::c_callback;
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

type PtrCallback = unsafe extern "C" fn(*const c_void) -> i32;

unsafe extern "C" {
    fn m_call_ptr(cb: PtrCallback, arg: *const c_void) -> i32;
    fn m_call_text(cb: PtrCallback, which: c_int) -> i32;
    fn m_sort_ints(
        values: *mut c_int,
        count: usize,
        compare: extern "C" fn(*const c_void, *const c_void) -> c_int,
    );
}

/// Calls `cb(arg)` from C; `cb` takes one pointer-sized argument.
fn call_ptr<T>(cb: unsafe extern "C" fn(*const T) -> i32, arg: *const T) -> i32 {
    // SAFETY: a pointer parameter has the same ABI whatever it points to,
    // and `arg` is NULL or valid for the call.
    unsafe {
        m_call_ptr(
            core::mem::transmute::<unsafe extern "C" fn(*const T) -> i32, PtrCallback>(cb),
            arg.cast(),
        )
    }
}

/// `call_ptr` for a callback that takes a `T *`.
fn call_mut_ptr<T>(cb: unsafe extern "C" fn(*mut T) -> i32, arg: *mut T) -> i32 {
    // SAFETY: as in `call_ptr`.
    unsafe {
        m_call_ptr(
            core::mem::transmute::<unsafe extern "C" fn(*mut T) -> i32, PtrCallback>(cb),
            arg.cast_const().cast(),
        )
    }
}

/// Calls `cb` from C with "hello" (0), NULL (1) or invalid UTF-8 (2).
fn call_text(cb: unsafe extern "C" fn(*const c_char) -> i32, which: c_int) -> i32 {
    // SAFETY: as in `call_ptr`; the strings are NUL-terminated.
    unsafe {
        m_call_text(
            core::mem::transmute::<unsafe extern "C" fn(*const c_char) -> i32, PtrCallback>(cb),
            which,
        )
    }
}

fn last_error() -> String {
    callgate::last_error().unwrap_or_default()
}

#[repr(C)]
pub struct Point {
    x: i32,
    y: i32,
}

#[c_callback(on_error = -1)]
fn shared_ref(point: &Point) -> i32 {
    point.x + point.y
}

#[c_callback(on_error = -1)]
fn mut_ref(point: &mut Point) -> i32 {
    point.x += 1;
    point.x
}

#[c_callback(on_error = -1)]
fn optional_ref(point: Option<&Point>) -> i32 {
    point.map_or(100, |point| point.x)
}

#[c_callback(on_error = -1)]
fn optional_mut(point: Option<&mut Point>) -> i32 {
    point.map_or(100, |point| {
        point.y += 1;
        point.y
    })
}

#[c_callback(on_error = -1)]
fn c_string(text: &CStr) -> i32 {
    text.to_bytes().len() as i32
}

#[c_callback(on_error = -1)]
fn optional_c_string(text: Option<&CStr>) -> i32 {
    text.map_or(100, |text| text.to_bytes().len() as i32)
}

#[c_callback(on_error = -1)]
fn utf8(text: &str) -> i32 {
    text.len() as i32
}

#[c_callback(on_error = -1)]
fn optional_utf8(text: Option<&str>) -> i32 {
    text.map_or(100, |text| text.len() as i32)
}

#[test]
fn references_arrive_as_pointers() {
    let mut point = Point { x: 1, y: 2 };
    assert_eq!(call_ptr(shared_ref, &point), 3);
    assert_eq!(call_mut_ptr(mut_ref, &mut point), 2);
    assert_eq!(call_ptr(optional_ref, &point), 2);
    assert_eq!(call_mut_ptr(optional_mut, &mut point), 3);
    assert_eq!((point.x, point.y), (2, 3));
}

#[test]
fn null_for_a_reference_returns_on_error_naming_the_argument() {
    callgate::clear_last_error();
    assert_eq!(call_ptr(shared_ref, core::ptr::null()), -1);
    assert_eq!(last_error(), "argument `point` is NULL");
    callgate::clear_last_error();
    assert_eq!(call_mut_ptr(mut_ref, core::ptr::null_mut()), -1);
    assert_eq!(last_error(), "argument `point` is NULL");
}

#[test]
fn null_for_an_option_is_none() {
    callgate::clear_last_error();
    assert_eq!(call_ptr(optional_ref, core::ptr::null()), 100);
    assert_eq!(call_mut_ptr(optional_mut, core::ptr::null_mut()), 100);
    assert_eq!(call_text(optional_c_string, 1), 100);
    assert_eq!(call_text(optional_utf8, 1), 100);
    assert_eq!(callgate::last_error(), None);
}

#[test]
fn strings_arrive_as_char_pointers() {
    assert_eq!(call_text(c_string, 0), 5);
    assert_eq!(call_text(optional_c_string, 0), 5);
    assert_eq!(call_text(utf8, 0), 5);
    assert_eq!(call_text(optional_utf8, 0), 5);
    // `&CStr` takes any bytes.
    assert_eq!(call_text(c_string, 2), 4);
}

#[test]
fn null_for_a_string_returns_on_error_naming_the_argument() {
    callgate::clear_last_error();
    assert_eq!(call_text(c_string, 1), -1);
    assert_eq!(last_error(), "argument `text` is NULL");
    callgate::clear_last_error();
    assert_eq!(call_text(utf8, 1), -1);
    assert_eq!(last_error(), "argument `text` is NULL");
}

#[test]
fn invalid_utf8_returns_on_error_naming_the_argument() {
    callgate::clear_last_error();
    assert_eq!(call_text(utf8, 2), -1);
    assert!(
        last_error().starts_with("argument `text` is not valid UTF-8"),
        "{}",
        last_error()
    );
    callgate::clear_last_error();
    assert_eq!(call_text(optional_utf8, 2), -1);
    assert!(
        last_error().starts_with("argument `text` is not valid UTF-8"),
        "{}",
        last_error()
    );
}

#[derive(Debug)]
pub struct NotANumber(String);

impl fmt::Display for NotANumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a number", self.0)
    }
}

#[c_callback(on_error = -1, on_panic = -2)]
fn parse(text: &str) -> Result<i32, NotANumber> {
    text.parse().map_err(|_| NotANumber(text.to_owned()))
}

#[test]
fn err_returns_on_error_with_its_message() {
    callgate::clear_last_error();
    assert_eq!(call_text(parse, 0), -1);
    assert_eq!(last_error(), "`hello` is not a number");
}

#[c_callback(on_panic = -7)]
fn panics(text: &CStr) -> i32 {
    panic!("cannot handle {text:?}");
}

#[c_callback(on_error = -9)]
fn panics_with_on_error_only(text: &CStr) -> i32 {
    panic!("cannot handle {text:?} either");
}

#[test]
fn panic_returns_on_panic_with_the_message() {
    callgate::clear_last_error();
    assert_eq!(call_text(panics, 0), -7);
    assert_eq!(
        last_error(),
        "callback `panics` panicked: cannot handle \"hello\""
    );
    // Without `on_panic`, a panic returns the `on_error` value.
    assert_eq!(call_text(panics_with_on_error_only, 0), -9);
    assert!(
        last_error().contains("cannot handle \"hello\" either"),
        "{}",
        last_error()
    );
}

#[c_callback]
fn unit_panics(text: &CStr) {
    panic!("unit callback given {text:?}");
}

#[c_callback]
fn pointer_panics(_text: &CStr) -> *const c_char {
    panic!("pointer callback");
}

#[test]
fn unit_and_pointer_returns_need_no_fallback() {
    type UnitCallback = unsafe extern "C" fn(*const c_char);
    // SAFETY: a valid C string.
    unsafe { (unit_panics as UnitCallback)(c"x".as_ptr()) };
    assert!(
        last_error().contains("unit callback given"),
        "{}",
        last_error()
    );
    // SAFETY: a valid C string.
    assert!(unsafe { pointer_panics(c"x".as_ptr()) }.is_null());
    assert!(
        last_error().contains("pointer callback"),
        "{}",
        last_error()
    );
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    a: f64,
    b: u8,
}

#[c_callback(on_panic = Pair { a: 0.0, b: 0 })]
fn pass_through(
    a: f64,
    b: u8,
    flag: bool,
    raw: *const u8,
    next: Option<extern "C" fn(u8) -> u8>,
) -> Pair {
    let b = next.map_or(b, |next| next(b));
    Pair {
        a: if flag { a } else { -a },
        b: b + u8::from(raw.is_null()),
    }
}

extern "C" fn double(value: u8) -> u8 {
    value * 2
}

#[test]
fn plain_values_pass_through() {
    assert_eq!(
        pass_through(1.5, 3, true, core::ptr::null(), Some(double)),
        Pair { a: 1.5, b: 7 }
    );
    assert_eq!(
        pass_through(1.5, 3, false, &0, None),
        Pair { a: -1.5, b: 3 }
    );
}

#[c_callback(local, on_panic = 0)]
fn compare(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort passes pointers to two elements of the int array.
    let (a, b) = unsafe { (*a.cast::<c_int>(), *b.cast::<c_int>()) };
    a.cmp(&b) as c_int
}

#[test]
fn a_local_comparator_sorts_with_qsort() {
    let mut values: Vec<c_int> = vec![5, -3, 9, 0, 2, 2, -8];
    // SAFETY: `values` holds `len` ints; `compare` matches qsort's contract.
    unsafe { m_sort_ints(values.as_mut_ptr(), values.len(), compare) };
    assert_eq!(values, [-8, -3, 0, 2, 2, 5, 9]);
    // Also straight through the libc binding.
    let mut values: Vec<c_int> = vec![3, 1, 2];
    // SAFETY: as above.
    unsafe {
        libc::qsort(
            values.as_mut_ptr().cast(),
            values.len(),
            size_of::<c_int>(),
            Some(compare),
        )
    };
    assert_eq!(values, [1, 2, 3]);
}
