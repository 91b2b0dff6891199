use callgate::{Local, c_callback};

mod buffers {
    #[derive(Default)]
    pub struct Scratch(pub Vec<u8>);

    impl callgate::Local for Scratch {}
}

use buffers::Scratch;

/// The same type under another name.
type Bytes = buffers::Scratch;

#[derive(Default)]
pub struct Other;

impl Local for Other {}

#[c_callback]
pub fn copy(#[local] from: &mut Scratch, #[local] _other: &mut Other, #[local] to: &mut Bytes) {
    to.0.extend_from_slice(&from.0);
}

fn main() {}
