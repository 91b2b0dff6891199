use callgate::c_callback;

#[c_callback(gate = never)]
pub fn tick() {}

fn main() {}
