use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn scale<const N: i32>(value: i32) -> i32 {
    value * N
}

fn main() {}
