// `attach`, `gate` and `crate`, each spelled every way it can be; the
// derives' `#[callgate(crate = path)]`.
use callgate::{CEnum, CValue, c_callback};

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

#[derive(Clone, Copy, CValue)]
#[callgate(crate = crate::runtime)]
#[repr(C)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

#[derive(CEnum)]
#[callgate(crate = crate::runtime)]
#[repr(u8)]
pub enum Unit {
    Pixel = 1,
    Point = 2,
}

#[c_callback(crate = crate::runtime, on_error = 0)]
pub fn area(size: Size, unit: Unit) -> u64 {
    let scale = match unit {
        Unit::Pixel => 1,
        Unit::Point => 4,
    };
    u64::from(size.width) * u64::from(size.height) * scale
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
    let size = Size {
        width: 2,
        height: 3,
    };
    assert_eq!(area(size, 2), 24);
    assert_eq!(area(size, 3), 0);
}
