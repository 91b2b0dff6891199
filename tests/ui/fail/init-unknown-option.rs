#[callgate::init(foreground)]
fn setup() {}

fn main() {}
