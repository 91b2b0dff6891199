use callgate::c_callback;
use std::fmt::Display;

#[c_callback]
pub fn show(value: &dyn Display) {
    println!("{value}");
}

fn main() {}
