use callgate::c_callback;
use std::ffi::c_void;

pub struct Counter {
    pub calls: u64,
}

#[c_callback(local)]
pub fn count(item: *const c_void, #[user_data] counter: Counter) {
    let _ = (item, counter.calls);
}

fn main() {}
