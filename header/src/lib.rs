#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod comment;
mod cxx;
mod declaration;
pub mod format;
mod render;
mod scan;
mod types;

pub use declaration::{Declaration, Kind, Member, RustType};
pub use render::{HeaderOptions, render};
pub use scan::{Error, extract};

#[cfg(test)]
mod tests;
