use callgate::c_callback;

pub struct Handler;

#[c_callback]
impl Handler {
    pub fn handle() {}
}

fn main() {}
