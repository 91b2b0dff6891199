#[derive(Clone, Copy, callgate::CValue)]
#[repr(C)]
pub struct Pair<T> {
    pub first: T,
    pub second: T,
}

fn main() {}
