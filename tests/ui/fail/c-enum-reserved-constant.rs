#[derive(Clone, Copy, callgate::CEnum)]
#[repr(i32)]
pub enum Choice {
    First,
    #[callgate(rename = "default")]
    Fallback,
}

fn main() {}
