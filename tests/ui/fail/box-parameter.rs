use callgate::c_callback;

pub struct Session {
    pub id: u64,
}

#[c_callback]
pub fn close(session: Box<Session>) {
    drop(session);
}

fn main() {}
