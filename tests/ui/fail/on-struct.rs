use callgate::c_callback;

#[c_callback]
pub struct Handler {
    pub code: i32,
}

fn main() {}
