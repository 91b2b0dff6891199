use callgate::{Local, c_callback};

#[derive(Default)]
pub struct Scratch(Vec<u8>);

impl Local for Scratch {}

#[c_callback]
pub fn record(#[local(fresh)] scratch: &mut Scratch, byte: u8) {
    scratch.0.push(byte);
}

fn main() {}
