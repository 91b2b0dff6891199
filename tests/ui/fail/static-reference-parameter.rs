use callgate::c_callback;

#[derive(Default)]
pub struct Seen(Vec<&'static str>);

impl callgate::Local for Seen {}

// The body could keep `name` after the call: C's string may be gone by then.
#[c_callback(on_panic = ())]
pub fn remember(name: &'static str, #[local] seen: &mut Seen) {
    seen.0.push(name);
}

fn main() {}
