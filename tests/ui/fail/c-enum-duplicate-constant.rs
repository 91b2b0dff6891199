#[derive(Clone, Copy, callgate::CEnum)]
#[repr(u8)]
pub enum Mode {
    Fast,
    #[callgate(rename = "MODE_FAST")]
    Quick,
}

fn main() {}
