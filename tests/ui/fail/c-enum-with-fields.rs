#[derive(callgate::CEnum)]
#[repr(u8)]
pub enum Shape {
    Empty,
    Circle { radius: f64 },
}

fn main() {}
