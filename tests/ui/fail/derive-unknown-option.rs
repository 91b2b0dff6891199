use callgate::CValue;

#[derive(Clone, Copy, CValue)]
#[callgate(krate = ::callgate)]
#[repr(C)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

fn main() {}
