// Every combination of `on_panic` and `on_error`, and the defaults for `()`
// and pointer returns; a parameter only a fallback uses is no unused
// variable.
#![deny(unused_variables)]
use callgate::c_callback;
use std::ffi::c_char;
use std::fmt;

pub struct Failed;

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("failed")
    }
}

const FAILED: i32 = -100;

#[c_callback(on_panic = -1)]
pub fn panic_value_only(fail: bool) -> Result<i32, Failed> {
    if fail { Err(Failed) } else { Ok(1) }
}

#[c_callback(on_error = FAILED)]
pub fn error_value_only(fail: bool) -> Result<i32, Failed> {
    if fail { Err(Failed) } else { Ok(1) }
}

#[c_callback(on_error = -1, on_panic = -2)]
pub fn both_values(fail: bool) -> Result<i32, Failed> {
    if fail { Err(Failed) } else { Ok(1) }
}

#[c_callback(on_panic = abort)]
pub fn abort_only(value: u8) -> u8 {
    value
}

#[c_callback(on_panic = abort, on_error = 0)]
pub fn abort_on_panic_value_on_error(fail: bool) -> Result<u8, Failed> {
    if fail { Err(Failed) } else { Ok(1) }
}

#[c_callback(on_panic = 0.5, on_error = abort)]
pub fn value_on_panic_abort_on_error(fail: bool) -> Result<f64, Failed> {
    if fail { Err(Failed) } else { Ok(1.0) }
}

#[c_callback]
pub fn unit_needs_no_fallback(value: i32) {
    let _ = value;
}

#[c_callback]
pub fn unit_result_needs_no_fallback(fail: bool) -> Result<(), Failed> {
    if fail { Err(Failed) } else { Ok(()) }
}

#[c_callback]
pub fn const_pointer_defaults_to_null() -> *const c_char {
    c"static".as_ptr()
}

#[c_callback]
pub fn mut_pointer_defaults_to_null(value: *mut u8) -> *mut u8 {
    value
}

#[c_callback(on_panic = { let fallback = 40; fallback + 2 })]
pub fn block_expression(value: i32) -> i32 {
    value
}

/// Reports the failure through the out-parameter C passed, if any.
fn report(message: *mut *const c_char) -> i32 {
    if !message.is_null() {
        // SAFETY: C passes NULL or a pointer it lets the callback write.
        unsafe { *message = c"failed".as_ptr() };
    }
    -1
}

#[c_callback(on_error = report(error_message))]
pub fn fallback_only_parameter(fail: bool, error_message: *mut *const c_char) -> Result<i32, Failed> {
    if fail { Err(Failed) } else { Ok(1) }
}

fn main() {
    assert_eq!(panic_value_only(true), -1);
    assert_eq!(error_value_only(true), FAILED);
    assert_eq!(both_values(true), -1);
    assert_eq!(abort_only(3), 3);
    assert_eq!(abort_on_panic_value_on_error(true), 0);
    assert_eq!(value_on_panic_abort_on_error(false), 1.0);
    unit_needs_no_fallback(1);
    unit_result_needs_no_fallback(true);
    assert!(!const_pointer_defaults_to_null().is_null());
    assert!(mut_pointer_defaults_to_null(std::ptr::null_mut()).is_null());
    assert_eq!(block_expression(1), 1);
    let mut message = std::ptr::null();
    assert_eq!(fallback_only_parameter(true, &mut message), -1);
    assert!(!message.is_null());
}
