// Types passed by value that C may pass invalid: derived `CValue` structs
// and `CEnum` enums, as parameters of callbacks and closures.
use callgate::{CEnum, CValue, Closure, c_callback};
use std::ffi::c_int;
use std::marker::PhantomData;
use std::num::NonZeroU32;
use std::ptr::NonNull;

#[derive(Clone, Copy, CValue)]
#[repr(C)]
pub struct Sample {
    pub at: u64,
    pub value: f32,
    pub valid: bool,
    pub next: *const Sample,
    pub id: Option<NonZeroU32>,
    pub owner: Option<NonNull<c_int>>,
    pub on_read: Option<extern "C" fn(*const Sample) -> c_int>,
}

#[derive(Clone, Copy, CValue)]
#[repr(transparent)]
pub struct Handle(u32);

// C cannot say `packed` portably, nor generics: a header's prelude defines
// these.
#[derive(Clone, Copy, CValue)]
#[repr(C, packed)]
#[callgate(skip_header)]
pub struct Packed {
    pub tag: u8,
    pub value: u32,
}

#[derive(Clone, Copy, CValue)]
#[repr(C)]
#[callgate(skip_header)]
pub struct Tagged<T: Copy> {
    pub tag: u32,
    pub value: T,
    marker: PhantomData<fn() -> T>,
}

#[derive(CEnum)]
#[repr(i32)]
pub enum Signed {
    Low = -3,
    Zero = 0,
    High = 1 << 20,
}

#[derive(CEnum)]
#[repr(u8)]
pub enum Byte {
    A = b'a',
    B,
    Z = b'z',
}

#[derive(CEnum)]
#[repr(C)]
pub enum Plain {
    One = 1,
    Two,
}

#[derive(CEnum)]
#[repr(usize)]
pub enum Wide {
    Max = usize::MAX,
}

#[c_callback(on_error = -1)]
pub fn all(
    signed: Signed,
    byte: Byte,
    plain: Plain,
    wide: Wide,
    sample: Sample,
    handle: Handle,
    packed: Packed,
    tagged: Tagged<i16>,
) -> i32 {
    let _ = (signed, byte, plain, wide, sample, handle, packed, tagged);
    0
}

#[c_callback(local, on_error = 0)]
pub fn local_enum(byte: Byte) -> u8 {
    byte as u8
}

fn main() {
    let _: extern "C" fn(u8) -> u8 = local_enum;
    let closure = Closure::new(-1, |sample: Sample, handle: Handle| -> c_int {
        sample.valid as c_int + handle.0 as c_int
    });
    drop(closure);
}
