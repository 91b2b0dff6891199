#[callgate::init]
struct Settings;

fn main() {}
