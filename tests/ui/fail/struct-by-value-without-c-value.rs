use callgate::c_callback;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[c_callback(on_error = 0.0)]
pub fn length(point: Point) -> f64 {
    point.x.hypot(point.y)
}

fn main() {}
