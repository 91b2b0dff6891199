use callgate::c_callback;

#[c_callback(export = "", on_panic = 0)]
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

fn main() {}
