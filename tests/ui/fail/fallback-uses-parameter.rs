use callgate::c_callback;

// The fallback sees the raw pointer C passed, perhaps NULL (which may be
// why the call failed): reading through it takes an `unsafe` block.
#[c_callback(on_error = { *out = -1; -1 })]
pub fn store(out: &mut i32) -> Result<i32, String> {
    *out = 1;
    Ok(0)
}

fn main() {}
