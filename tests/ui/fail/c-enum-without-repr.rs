#[derive(callgate::CEnum)]
pub enum Mode {
    Read,
    Write,
}

fn main() {}
