use callgate::{Local, c_callback};

#[derive(Default)]
pub struct Scratch(Vec<u8>);

impl Local for Scratch {}

#[c_callback]
pub fn copy(#[local] from: &mut Scratch, #[local] to: &mut Scratch) {
    to.0.extend_from_slice(&from.0);
}

fn main() {}
