use callgate::c_callback;

#[c_callback(on_panic = 0)]
#[unsafe(no_mangle)]
pub fn exported(value: i32) -> i32 {
    value
}

#[c_callback(on_panic = 0)]
#[unsafe(export_name = "renamed")]
pub fn renamed_here(value: i32) -> i32 {
    value
}

fn main() {}
