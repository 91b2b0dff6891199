use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn sum(#[len = scale] values: &[i32], scale: f64) -> i32 {
    (values.iter().sum::<i32>() as f64 * scale) as i32
}

fn main() {}
