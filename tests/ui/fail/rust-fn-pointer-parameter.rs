use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn apply(f: fn(i32) -> i32, value: i32) -> i32 {
    f(value)
}

fn main() {}
