// What carries over from the user's fn: docs, `cfg`, lint levels on the
// body, lifetimes, and an explicit `extern "C"`.
#![deny(unused_variables)]
use callgate::c_callback;

/// Documented.
///
/// # Safety
///
/// `value` is NULL or points to an `i32`.
#[c_callback(on_panic = 0)]
#[must_use]
pub fn documented(value: &i32) -> i32 {
    *value
}

#[cfg(any())]
#[c_callback]
pub fn compiled_out(value: String) {}

#[c_callback]
#[allow(unused_variables)]
pub fn lint_levels_apply_to_the_body(value: i32) {
    let unused = value;
}

#[c_callback(on_panic = 0)]
#[expect(clippy::needless_return)]
pub fn expectations_apply_to_the_body(value: i32) -> i32 {
    return value;
}

#[c_callback(on_panic = 0)]
pub fn with_elided_lifetimes(first: &u8, second: Option<&'_ u8>) -> u8 {
    second.copied().unwrap_or(*first)
}

#[c_callback(on_panic = 0)]
pub extern "C" fn explicit_abi(value: i32) -> i32 {
    value
}

#[c_callback(on_panic = 0)]
pub extern "C" fn implicit_c_abi(value: i32) -> i32 {
    value
}

pub struct Opaque {
    pub inner: Vec<u8>,
}

/// C only passes back a pointer it got from Rust: the user allows it.
#[c_callback(on_panic = 0)]
#[allow(improper_ctypes_definitions)]
pub fn opaque_by_reference(value: &Opaque) -> usize {
    value.inner.len()
}

fn main() {
    // SAFETY: valid pointers.
    unsafe {
        assert_eq!(documented(&3), 3);
        assert_eq!(with_elided_lifetimes(&1, std::ptr::null()), 1);
    }
    lint_levels_apply_to_the_body(1);
    assert_eq!(expectations_apply_to_the_body(2), 2);
    assert_eq!(explicit_abi(4), 4);
    assert_eq!(implicit_c_abi(5), 5);
}
