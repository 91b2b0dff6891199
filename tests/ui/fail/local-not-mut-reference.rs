use callgate::{Local, c_callback};

#[derive(Default)]
pub struct Scratch(Vec<u8>);

impl Local for Scratch {}

#[c_callback]
pub fn record(#[local] scratch: &Scratch, byte: u8) {
    let _ = (scratch, byte);
}

fn main() {}
