use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub unsafe fn first_byte(bytes: *const u8) -> u8 {
    unsafe { *bytes }
}

fn main() {}
