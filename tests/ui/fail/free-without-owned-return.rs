use callgate::c_callback;
use std::ffi::CString;

callgate::export_free!(pub string_free: CString);

#[c_callback(free = string_free, on_panic = 0)]
pub fn length(text: &str) -> usize {
    text.len()
}

fn main() {}
