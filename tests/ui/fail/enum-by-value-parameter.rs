use callgate::c_callback;

#[repr(i32)]
pub enum Mode {
    Read = 1,
    Write = 2,
}

#[c_callback(on_error = -1)]
pub fn open(mode: Mode) -> i32 {
    mode as i32
}

fn main() {}
