#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod declaration;
pub mod format;
mod render;
mod scan;

pub use declaration::{Declaration, Kind, RustType};
pub use render::{HeaderOptions, render};
pub use scan::{Error, extract};

#[cfg(test)]
mod tests;
