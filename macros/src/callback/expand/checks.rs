//! The compile-time checks the trampoline carries as nested items: that its
//! `#[local]` parameters' types differ, and that rustc finds the elements C
//! reads and writes in place FFI-safe.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::mentions_lifetime;
use crate::callback::ast::{Callback, Kind, Owned};

/// For two or more `#[local]` parameters, a check that their types differ
/// where the macro cannot see it (one type under two paths, or through an
/// alias): each implements one trait, so a type named twice is a
/// conflicting implementation (E0119) at its second parameter. (The same
/// path written twice has its own error in `valid`.)
pub(super) fn distinct_locals(local_params: &[(&Type, &Ident)]) -> Option<TokenStream> {
    if local_params.len() < 2 {
        return None;
    }
    let impls = local_params.iter().map(|(elem, _)| {
        quote_spanned! {elem.span()=>
            impl EachLocalParameterTypeOnce for #elem {}
        }
    });
    Some(quote! {
        // A thread has one value of each `#[local]` type: two parameters
        // cannot both take it.
        const _: () = {
            trait EachLocalParameterTypeOnce {}
            #(#impls)*
        };
    })
}

/// Asks rustc whether the elements of the slices, `OutBuf`s and owned
/// arrays are FFI-safe by value, as C reads and writes them in place: each
/// element type becomes the parameter of an `extern "C" fn` that denies
/// `improper_ctypes_definitions` (unless the user allowed it), spanned at
/// the user's type.
pub(super) fn element_checks(callback: &Callback, allowed: bool) -> TokenStream {
    if allowed {
        return TokenStream::new();
    }
    let params = callback.params.iter().filter_map(|param| match param.kind {
        Kind::Slice { elem, .. } | Kind::OutBuf { elem, .. } => Some(elem),
        _ => None,
    });
    let returned = match callback.owned {
        Some(Owned::Slice { elem, .. }) => Some(elem),
        _ => None,
    };
    // An element naming the fn's lifetimes cannot be named by a nested item;
    // `valid`'s syntactic check is all it gets.
    let elements: Vec<&Type> = params
        .chain(returned)
        .filter(|elem| !mentions_lifetime(elem.to_token_stream()))
        .collect();
    if elements.is_empty() {
        return TokenStream::new();
    }
    let checks = elements.iter().map(|elem| {
        quote_spanned! {elem.span()=>
            #[deny(improper_ctypes_definitions)]
            extern "C" fn __callgate_element(_: #elem) {}
        }
    });
    quote! {
        #[allow(dead_code)]
        const _: () = {
            #(const _: () = { #checks };)*
        };
    }
}
