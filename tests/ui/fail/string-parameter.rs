use callgate::c_callback;

#[c_callback]
pub fn set_name(name: String) {
    let _ = name;
}

fn main() {}
