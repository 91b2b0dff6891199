//! Procedural macros for [callgate](https://docs.rs/callgate): `#[c_callback]`,
//! `#[callgate::init]` and the derives of the types C passes by value,
//! `CValue` and `CEnum`.
//!
//! Depend on `callgate` and use the macros through it; the code they generate
//! names the runtime as `::callgate::__private` (or `crate = path`:
//! `#[c_callback(crate = path)]`, `#[callgate::init(crate = path)]`, and
//! `#[callgate(crate = path)]` beside the derives).

mod args;
mod callback;
mod declarations;
mod derive;
mod fail;
mod format;
mod free;
mod init;
mod record;
mod table;
mod targets;
mod type_record;

use proc_macro::TokenStream;

/// Turns a Rust `fn` into an `extern "C"` trampoline C can call safely.
///
/// Use it as `callgate::c_callback`; its documentation, with every option
/// and a compiling example of each, is on that re-export.
#[proc_macro_attribute]
pub fn c_callback(args: TokenStream, item: TokenStream) -> TokenStream {
    callback::c_callback(args.into(), item.into()).into()
}

/// Implements `callgate::CValue` for a `#[repr(C)]` or `#[repr(transparent)]`
/// struct whose fields are all `CValue`s, so C may pass it by value, and
/// records its C definition for `callgate-header`.
///
/// Use it as `callgate::CValue`; its documentation is on the trait.
#[proc_macro_derive(CValue, attributes(callgate))]
pub fn derive_c_value(input: TokenStream) -> TokenStream {
    derive::c_value(input.into()).into()
}

/// Lets C pass a fieldless enum by value as the integer of its `repr`,
/// checked against the variants at every call, and records its C
/// definition for `callgate-header`.
///
/// Use it as `callgate::CEnum`; its documentation is on that re-export.
#[proc_macro_derive(CEnum, attributes(callgate))]
pub fn derive_c_enum(input: TokenStream) -> TokenStream {
    derive::c_enum(input.into()).into()
}

/// Marks a function of the runtime's call path: `#[inline(always)]`, but
/// not in a `dev` build or at `opt-level = 0` (`cfg(callgate_unoptimized)`,
/// set by the runtime's build script), where forcing it inline would give
/// each nested callback's frame every inlined function's locals. For the
/// runtime's own code. Not public API.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn hot_path(args: TokenStream, item: TokenStream) -> TokenStream {
    let args = proc_macro2::TokenStream::from(args);
    let item = proc_macro2::TokenStream::from(item);
    if !args.is_empty() {
        return syn::Error::new_spanned(args, "#[hot_path] takes no arguments")
            .to_compile_error()
            .into();
    }
    quote::quote!(#[cfg_attr(not(callgate_unoptimized), inline(always))] #item).into()
}

/// Records the C declarations of `extern "C"` fns exported by hand, for
/// `callgate-header`; `callgate::export_error_api!` uses it. Not public API.
#[doc(hidden)]
#[proc_macro]
pub fn __declarations(input: TokenStream) -> TokenStream {
    declarations::declarations(input.into()).into()
}

/// Runs a fn when the library is loaded, before any callback passes the
/// init gate.
///
/// Use it as `#[callgate::init]`; its documentation is on that re-export.
#[proc_macro_attribute]
pub fn init(args: TokenStream, item: TokenStream) -> TokenStream {
    init::init(args.into(), item.into()).into()
}

/// Declares the exported function that frees one type of owned result.
///
/// Use it as `callgate::export_free!`, whose documentation this is; that
/// macro passes its `$crate` first.
#[doc(hidden)]
#[proc_macro]
pub fn export_free_impl(input: TokenStream) -> TokenStream {
    free::export_free(input.into()).into()
}

/// Declares an exported table of `local` callbacks.
///
/// Use it as `callgate::export_table!`, whose documentation this is; that
/// macro passes its `$crate` first.
#[doc(hidden)]
#[proc_macro]
pub fn export_table_impl(input: TokenStream) -> TokenStream {
    table::export_table(input.into()).into()
}
