use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn peek(value: &&i32) -> i32 {
    **value
}

fn main() {}
