//! Procedural macros for [callgate](https://docs.rs/callgate): `#[c_callback]`
//! and `#[callgate::init]`.
//!
//! Depend on `callgate` and use the macros through it; the code they generate
//! names the runtime as `::callgate::__private` (or `crate = path`).

mod callback;
mod fail;
mod init;

use proc_macro::TokenStream;

#[doc = include_str!("../doc/c_callback.md")]
#[proc_macro_attribute]
pub fn c_callback(args: TokenStream, item: TokenStream) -> TokenStream {
    callback::c_callback(args.into(), item.into()).into()
}

#[doc = include_str!("../doc/init.md")]
#[proc_macro_attribute]
pub fn init(args: TokenStream, item: TokenStream) -> TokenStream {
    init::init(args.into(), item.into()).into()
}
