#[derive(Clone, Copy, callgate::CValue)]
#[repr(C, packed)]
pub struct Header {
    pub tag: u8,
    pub length: u32,
}

fn main() {}
