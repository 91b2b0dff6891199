use callgate::c_callback;

#[c_callback(on_panic = String::new())]
pub fn greeting() -> String {
    "hello".to_owned()
}

fn main() {}
