use callgate::c_callback;

#[repr(C)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

#[c_callback(on_panic = 0.0)]
pub fn total(points: &[&Point]) -> f64 {
    points.iter().map(|point| point.x + point.y).sum()
}

fn main() {}
