use callgate::c_callback;

#[c_callback]
pub fn shout(text: &mut str) {
    text.make_ascii_uppercase();
}

fn main() {}
