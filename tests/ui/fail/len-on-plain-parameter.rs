use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn double(#[len] value: i32) -> i32 {
    value * 2
}

fn main() {}
