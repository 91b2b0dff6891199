use callgate::c_callback;

#[c_callback(on_panic = "")]
pub fn version() -> &'static str {
    "1.0"
}

fn main() {}
