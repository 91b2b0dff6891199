use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn add(pair: (i32, i32)) -> i32 {
    pair.0 + pair.1
}

fn main() {}
