// `#[unsafe(no_mangle)]` by default, `export = "sym"`, and `local` (no symbol).
use callgate::c_callback;

/// Exported as `add_ints`' own name.
#[c_callback(on_panic = -1)]
pub fn add_ints(a: i32, b: i32) -> i32 {
    a + b
}

#[c_callback(export = "ui_pass_renamed", on_panic = -1)]
pub fn renamed(a: i32) -> i32 {
    a
}

#[c_callback(local, on_panic = 0)]
fn compare(a: *const i32, b: *const i32) -> i32 {
    // SAFETY: the caller passes pointers into the slice being sorted.
    let (a, b) = unsafe { (*a, *b) };
    a.cmp(&b) as i32
}

fn main() {
    let pointer: extern "C" fn(*const i32, *const i32) -> i32 = compare;
    assert_eq!(pointer(&1, &2), -1);
    assert_eq!(add_ints(2, 3), 5);
    assert_eq!(renamed(7), 7);
}
