use callgate::c_callback;
use std::ffi::CString;

callgate::export_free!(pub greet_free: CString);

#[c_callback(free = greet_fre)]
pub fn greet() -> CString {
    CString::from(c"hello")
}

fn main() {}
