use callgate::c_callback;

#[c_callback(on_panic = "failed")]
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

fn main() {}
