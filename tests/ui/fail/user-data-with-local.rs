use callgate::{Local, c_callback};

#[derive(Default)]
pub struct Scratch(Vec<u8>);

impl Local for Scratch {}

#[c_callback(local)]
pub fn fill(#[user_data] #[local] scratch: &mut Scratch) {
    scratch.0.push(1);
}

fn main() {}
