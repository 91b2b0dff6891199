// Every parameter and return mapping.
use callgate::{Local, c_callback};
use std::ffi::{CStr, c_void};
use std::ptr::NonNull;

#[repr(C)]
#[derive(Clone, Copy, callgate::CValue)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[derive(Default)]
pub struct Scratch(Vec<u8>);

impl Local for Scratch {}

#[derive(Default)]
pub struct Counter(u64);

impl Local for Counter {}

pub struct Session {
    pub id: u64,
}

#[c_callback(on_panic = 0.0)]
pub fn pass_through(a: i8, b: u64, c: f32, d: bool, e: usize, p: Point, raw: *mut c_void) -> f64 {
    let _ = (a, b, c, d, e, raw);
    p.x + p.y
}

#[c_callback(on_panic = 0)]
pub fn function_pointer(f: Option<extern "C" fn(i32) -> i32>, value: i32) -> i32 {
    f.map_or(value, |f| f(value))
}

#[c_callback(on_panic = -1)]
pub fn references(point: &Point, out: &mut f64, array: &[u8; 4]) -> i32 {
    *out = point.x + f64::from(array[0]);
    0
}

#[c_callback(on_panic = -1)]
pub fn nullable_references(point: Option<&Point>, out: Option<&mut f64>) -> i32 {
    if let (Some(point), Some(out)) = (point, out) {
        *out = point.y;
    }
    0
}

#[c_callback(on_panic = -1)]
pub fn strings(a: &CStr, b: Option<&CStr>, c: &str, d: Option<&str>) -> i32 {
    (a.to_bytes().len() + b.map_or(0, |b| b.to_bytes().len()) + c.len() + d.map_or(0, str::len))
        as i32
}

#[c_callback]
pub fn locals(#[local] scratch: &mut Scratch, byte: u8, #[local] counter: &mut Counter) {
    scratch.0.push(byte);
    counter.0 += 1;
}

#[c_callback(on_panic = 0)]
pub fn bindings(mut total: u32, _: u32, _unused: u32) -> u32 {
    total += 1;
    total
}

#[c_callback(on_panic = 0)]
pub fn owned_pointers(session: Option<Box<Session>>, handle: Option<NonNull<Session>>) -> u64 {
    let _ = handle;
    session.map_or(0, |session| session.id)
}

#[c_callback(on_panic = 0)]
pub fn nonzero_or_none(count: Option<std::num::NonZeroU32>) -> u32 {
    count.map_or(0, |count| 100 / count.get())
}

#[c_callback(on_panic = None)]
pub fn returns_nullable_reference(known: bool) -> Option<&'static Point> {
    static ORIGIN: Point = Point { x: 0.0, y: 0.0 };
    known.then_some(&ORIGIN)
}

#[c_callback(on_panic = 0)]
pub fn returns_io_result(value: i32) -> std::io::Result<i32> {
    Ok(value)
}

fn main() {
    let mut out = 0.0;
    let point = Point { x: 1.0, y: 2.0 };
    // SAFETY: valid pointers to live values.
    unsafe {
        assert_eq!(references(&point, &mut out, &[1, 2, 3, 4]), 0);
        assert_eq!(
            nullable_references(std::ptr::null(), std::ptr::null_mut()),
            0
        );
        assert_eq!(
            strings(
                c"ab".as_ptr(),
                std::ptr::null(),
                c"c".as_ptr(),
                std::ptr::null()
            ),
            3
        );
    }
    assert_eq!(out, 2.0);
    assert_eq!(bindings(1, 2, 3), 2);
    assert_eq!(owned_pointers(None, None), 0);
    locals(7);
}
