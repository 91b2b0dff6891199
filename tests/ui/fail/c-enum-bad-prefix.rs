#[derive(Clone, Copy, callgate::CEnum)]
#[repr(u8)]
#[callgate(prefix = "2D_")]
pub enum Axis {
    X,
    Y,
}

fn main() {}
