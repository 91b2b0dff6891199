use callgate::{OutBuf, c_callback};

#[c_callback(on_panic = 0)]
pub fn names(out: OutBuf<'_, String>) -> usize {
    out.capacity()
}

fn main() {}
