use callgate::c_callback;
use std::rc::Rc;

// C may free the box on any thread; an `Rc` must stay on its own.
pub struct Shared {
    pub value: Rc<u64>,
}

callgate::export_free!(pub shared_free: Box<Shared>);

#[c_callback(free = shared_free)]
pub fn share() -> Box<Shared> {
    Box::new(Shared { value: Rc::new(1) })
}

fn main() {}
