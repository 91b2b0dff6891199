use callgate::c_callback;
use std::num::NonZeroU32;

#[repr(C)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

// C's memory may hold any bits of the C type: 0 for a count, any 32-bit
// value for a character, NULL for a function, a misaligned address for a
// pointer.
#[c_callback(on_panic = 0)]
pub fn count(value: &NonZeroU32) -> u32 {
    value.get()
}

#[c_callback(on_panic = 0)]
pub fn letter(value: &mut char) -> u32 {
    *value as u32
}

#[c_callback(on_panic = ())]
pub fn run(function: &extern "C" fn()) {
    function()
}

#[c_callback(on_panic = 0)]
pub fn points(points: &[Option<&Point>]) -> usize {
    points.len()
}

#[c_callback(on_panic = 0)]
pub fn counts(counts: &[NonZeroU32]) -> usize {
    counts.len()
}

fn main() {}
