use callgate::c_callback;

#[c_callback]
pub fn log_message(level: i32, _: ...) {
    let _ = level;
}

fn main() {}
