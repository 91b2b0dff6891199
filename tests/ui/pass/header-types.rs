//! The types the header defines, and typed `void *` parameters.

use std::ffi::c_int;
use std::marker::PhantomData;

use callgate::{CEnum, CValue, c_callback};

/// Renamed constants and an evaluated discriminant.
#[derive(Clone, Copy, CEnum)]
#[repr(i16)]
#[callgate(prefix = "AXIS_")]
pub enum Axis {
    Horizontal = -1,
    #[callgate(rename = "AXIS_UP")]
    Vertical = 1 << 3,
}

const CELLS: usize = 4;

#[derive(Clone, Copy, CValue)]
#[repr(C)]
pub struct Cell {
    pub values: [[f32; CELLS]; 2],
    pub next: Option<std::ptr::NonNull<Cell>>,
    pub notify: Option<extern "C" fn(cell: *const Cell)>,
    pub unit: PhantomData<u8>,
}

#[derive(Clone, Copy, CValue)]
#[repr(transparent)]
pub struct Weight(pub f64);

/// C cannot describe it; the prelude does.
#[derive(Clone, Copy, CValue)]
#[repr(C)]
#[callgate(skip_header)]
pub struct Pair<T> {
    pub first: T,
    pub second: T,
}

#[c_callback(local, on_panic = 0)]
pub fn by_weight(#[void] a: &Weight, #[void] b: Option<&Weight>, #[user_data] axis: &Axis) -> c_int {
    let _ = axis;
    b.map_or(0, |b| a.0.total_cmp(&b.0) as c_int)
}

#[c_callback(on_error = 0)]
pub fn sum(cell: Cell, axis: Axis, pair: Pair<i32>, #[void] seed: &mut Weight) -> i32 {
    seed.0 += f64::from(cell.values[0][0]);
    let _ = axis;
    pair.first + pair.second
}

fn main() {}
