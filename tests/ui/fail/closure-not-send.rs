use callgate::Closure;
use std::ffi::c_int;
use std::rc::Rc;

fn main() {
    let seen = Rc::new(std::cell::Cell::new(0));
    let closure = Closure::new(-1, move |value: c_int| {
        seen.set(value);
        value
    });
    drop(closure);
}
