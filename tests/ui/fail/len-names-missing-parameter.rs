use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn sum(#[len = count] values: &[i32]) -> i32 {
    values.iter().sum()
}

fn main() {}
