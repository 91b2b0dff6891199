use callgate::c_callback;
use std::fmt;

#[c_callback]
pub fn render() -> fmt::Result {
    Ok(())
}

fn main() {}
