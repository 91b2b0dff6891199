use callgate::c_callback;
use std::ffi::CString;

pub struct Session {
    pub id: u64,
}

callgate::export_free!(pub string_free: CString);

#[c_callback(free = string_free)]
pub fn open() -> Box<Session> {
    Box::new(Session { id: 1 })
}

fn main() {}
