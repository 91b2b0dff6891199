use callgate::c_callback;

#[c_callback]
pub fn consume<T: Copy>(value: T) {
    let _ = value;
}

fn main() {}
