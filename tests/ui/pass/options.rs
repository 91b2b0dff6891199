// `attach`, `gate` and `crate`, each spelled every way it can be.
use callgate::c_callback;

mod runtime {
    pub use callgate::*;
}

#[c_callback(attach = bound)]
pub fn attach_bound() {}

#[c_callback(attach = per_call)]
pub fn attach_per_call() {}

#[c_callback(gate = wait)]
pub fn gate_wait() {}

#[c_callback(gate = fail)]
pub fn gate_fail() {}

#[c_callback(gate = skip)]
pub fn gate_skip() {}

#[c_callback(crate = ::callgate)]
pub fn crate_absolute() {}

#[c_callback(crate = crate::runtime, on_panic = 0)]
pub fn crate_reexported() -> i32 {
    1
}

#[c_callback(
    export = "ui_pass_everything",
    on_panic = -1,
    on_error = -2,
    attach = per_call,
    gate = skip,
    crate = ::callgate,
)]
pub fn everything() -> i32 {
    0
}

fn main() {
    attach_bound();
    attach_per_call();
    gate_wait();
    gate_fail();
    gate_skip();
    crate_absolute();
    assert_eq!(crate_reexported(), 1);
    assert_eq!(everything(), 0);
}
