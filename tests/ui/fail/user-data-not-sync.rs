use callgate::c_callback;
use std::cell::Cell;
use std::ffi::{c_int, c_void};

#[c_callback(local, on_panic = 0)]
pub fn compare(a: *const c_void, b: *const c_void, #[user_data] calls: &Cell<u64>) -> c_int {
    calls.set(calls.get() + 1);
    let _ = (a, b);
    0
}

fn main() {}
