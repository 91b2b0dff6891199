use callgate::c_callback;

#[c_callback]
pub fn bytes(count: usize) -> Vec<u8> {
    vec![0; count]
}

fn main() {}
