use callgate::c_callback;
use std::sync::Mutex;

// One lifetime for C's pointer and the user data would let the body keep
// the pointer in the user data past the call.
#[c_callback(on_panic = ())]
pub fn keep<'a>(byte: &'a u8, #[user_data] kept: &'a Mutex<Vec<&'a u8>>) {
    kept.lock().unwrap().push(byte);
}

fn main() {}
