use callgate::c_callback;
use std::ffi::CString;

#[c_callback]
pub fn greeting() -> CString {
    CString::new("hello").unwrap()
}

fn main() {}
