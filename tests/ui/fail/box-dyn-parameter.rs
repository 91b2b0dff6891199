use callgate::c_callback;

#[c_callback]
pub fn register(handler: Box<dyn Fn(i32)>) {
    handler(0);
}

fn main() {}
