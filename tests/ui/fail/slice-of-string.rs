use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn count(names: &[String]) -> usize {
    names.len()
}

fn main() {}
