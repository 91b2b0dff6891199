use std::marker::PhantomData;

#[derive(Clone, Copy, callgate::CValue)]
#[repr(C)]
pub struct Marker {
    pub kind: PhantomData<u8>,
}

fn main() {}
