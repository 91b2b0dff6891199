#[derive(Clone, Copy, callgate::CValue)]
#[repr(transparent)]
pub struct Id(pub u32, pub [u8; 0]);

fn main() {}
