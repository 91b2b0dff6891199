use callgate::c_callback;
use std::ffi::c_int;

pub struct Counter {
    pub calls: u64,
}

// The expression must give the `void *`.
#[c_callback(local)]
pub fn count(index: c_int, #[user_data(from = index)] counter: &mut Counter) {
    counter.calls += 1;
}

fn main() {}
