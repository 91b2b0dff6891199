use callgate::c_callback;

#[derive(Default)]
pub struct Scratch(Vec<u8>);

#[c_callback]
pub fn record(#[local] scratch: &mut Scratch, byte: u8) {
    scratch.0.push(byte);
}

fn main() {}
