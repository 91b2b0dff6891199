#[derive(Clone, Copy)]
#[repr(u8)]
pub enum Kind {
    Text,
    Binary,
}

#[derive(Clone, Copy, callgate::CValue)]
#[repr(C)]
pub struct Entry {
    pub size: u64,
    pub kind: Kind,
}

fn main() {}
