#[derive(Clone, Copy, callgate::CValue)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

fn main() {}
