use callgate::c_callback;
use std::ffi::CString;

callgate::export_free!(pub string_free: CString);

#[c_callback(free = "string_free")]
pub fn greeting() -> CString {
    CString::new("hello").unwrap()
}

fn main() {}
