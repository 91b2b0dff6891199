#[callgate::init]
fn setup() -> i32 {
    0
}

fn main() {}
