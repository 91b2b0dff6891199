use callgate::c_callback;
use std::ffi::CString;

callgate::export_free!(pub string_free: CString);

#[c_callback(free = string_free, on_error = CString::default())]
pub fn greeting() -> Result<CString, std::ffi::NulError> {
    CString::new("hello")
}

fn main() {}
