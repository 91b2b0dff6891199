use callgate::c_callback;

#[c_callback(on_panic = (0, 0))]
pub fn min_max() -> (i32, i32) {
    (1, 2)
}

fn main() {}
