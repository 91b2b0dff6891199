use callgate::c_callback;

#[c_callback]
pub extern "system" fn on_event(code: i32) {
    let _ = code;
}

fn main() {}
