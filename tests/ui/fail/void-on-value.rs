use callgate::c_callback;
use std::ffi::c_int;

#[c_callback(local, on_panic = 0)]
pub fn compare(#[void] a: i32, #[void] b: &i32) -> c_int {
    a.cmp(b) as c_int
}

fn main() {}
