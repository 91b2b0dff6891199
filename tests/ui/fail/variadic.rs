use callgate::c_callback;

#[c_callback]
pub fn log_message(level: i32, ...) {
    let _ = level;
}

fn main() {}
