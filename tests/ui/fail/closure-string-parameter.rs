use callgate::Closure;
use std::ffi::c_int;

fn main() {
    let closure = Closure::new(-1, |name: String| -> c_int { name.len() as c_int });
    drop(closure);
}
