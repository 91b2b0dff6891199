use callgate::c_callback;

#[c_callback]
pub fn record(#[allow(unused)] byte: u8) {}

fn main() {}
