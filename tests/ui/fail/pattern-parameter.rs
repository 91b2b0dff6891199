use callgate::c_callback;

#[repr(C)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[c_callback(on_panic = 0.0)]
pub fn length(Point { x, y }: Point) -> f64 {
    (x * x + y * y).sqrt()
}

fn main() {}
