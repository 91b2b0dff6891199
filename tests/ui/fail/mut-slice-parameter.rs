use callgate::c_callback;

#[c_callback]
pub fn fill(out: &mut [u8]) {
    out.fill(0);
}

fn main() {}
