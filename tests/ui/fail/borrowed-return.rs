use callgate::c_callback;

#[repr(C)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[c_callback(on_panic = None)]
pub fn same(point: &Point) -> Option<&Point> {
    Some(point)
}

fn main() {}
