use callgate::c_callback;

#[c_callback(attach = per_thread)]
pub fn tick() {}

fn main() {}
