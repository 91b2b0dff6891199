use callgate::Closure;
use callgate::closure::{Accessor, FnMutBody};
use std::ffi::c_int;

// A body type of the user's own could name another closure's C functions,
// which read the data as that closure: the body traits are sealed.
pub struct Mine;

impl FnMutBody<fn(c_int) -> c_int, Mine> for Mine {
    fn functions() -> (
        unsafe extern "C" fn(*mut std::ffi::c_void, c_int) -> c_int,
        unsafe extern "C" fn(c_int, *mut std::ffi::c_void) -> c_int,
    ) {
        unimplemented!()
    }

    fn accessed<G: Accessor<fn(c_int) -> c_int>>(_: G) -> unsafe extern "C" fn(c_int) -> c_int {
        unimplemented!()
    }
}

fn main() {
    let _closure = Closure::new(-1, Mine);
}
