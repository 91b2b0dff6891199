use callgate::c_callback;
use std::num::NonZeroU32;

#[c_callback(on_panic = 0)]
pub fn per_item(count: NonZeroU32) -> u32 {
    100 / count.get()
}

fn main() {}
