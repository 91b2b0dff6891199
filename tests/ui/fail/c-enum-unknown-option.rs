#[derive(Clone, Copy, callgate::CEnum)]
#[repr(u8)]
#[callgate(rename = "axis_t")]
pub enum Axis {
    X,
    Y,
}

fn main() {}
