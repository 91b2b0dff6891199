use callgate::c_callback;

#[c_callback]
pub fn parse(text: &str) -> Result<i32, std::num::ParseIntError> {
    text.parse()
}

fn main() {}
