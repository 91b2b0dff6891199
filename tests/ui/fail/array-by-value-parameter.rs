use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn checksum(block: [u8; 16]) -> u8 {
    block.iter().fold(0, |a, b| a ^ b)
}

fn main() {}
