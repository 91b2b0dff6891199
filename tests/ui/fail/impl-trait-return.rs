use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn make_counter() -> impl Copy {
    0
}

fn main() {}
