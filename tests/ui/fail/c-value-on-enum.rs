#[derive(Clone, Copy, callgate::CValue)]
#[repr(i32)]
pub enum Mode {
    Read,
    Write,
}

fn main() {}
