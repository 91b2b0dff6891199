use callgate::c_callback;

#[c_callback(on_panic = Vec::new())]
pub fn samples() -> Vec<f32> {
    vec![1.0]
}

fn main() {}
