//! The trampoline's C signature: the parameters C passes for each of the
//! user's (`c_params`) and the names of the lengths among them, and, for a
//! `local` callback, the function-pointer type `export_table!` names.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, ItemFn};

use super::mentions_lifetime;
use crate::callback::ast::{Kind, Len, Param, is_pointer_array, takes_every_value};

/// For a `local` callback, its function-pointer type under its own name in
/// the type namespace, which `callgate::export_table!` names for the
/// table's field (as `export_free!` does for a free function). Left out
/// when the C signature names lifetimes, which a type alias cannot.
pub(super) fn local_pointer_type(item: &ItemFn, pointer: &TokenStream) -> Option<TokenStream> {
    if !item.sig.generics.params.is_empty() || mentions_lifetime(pointer.clone()) {
        return None;
    }
    let (vis, ident) = (&item.vis, &item.sig.ident);
    let cfgs = item.attrs.iter().filter(|attr| attr.path().is_ident("cfg"));
    Some(quote! {
        /// The function-pointer type of this `local` callback, for
        /// `callgate::export_table!`.
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #(#cfgs)*
        #vis type #ident = #pointer;
    })
}

/// The parameters C passes for `param`: none for a `#[local]`, a pointer
/// and (unless `#[len = other]` names another parameter) a `usize` length
/// for a slice, a `#[len] &str` or an `OutBuf`, else one. Spanned at the
/// user's type, so rustc's FFI-safety errors, and a missing `CArg` for a
/// value C may pass invalid, land there.
pub(super) fn c_params(param: &Param, name: &Ident, rt: &TokenStream) -> Vec<TokenStream> {
    let span = param.ty.span();
    let pointer = match param.kind {
        Kind::Slice {
            mutable: false,
            elem,
            ..
        } if is_pointer_array(elem) => quote_spanned!(span=> *mut #elem),
        Kind::Value if takes_every_value(param.ty) => param.ty.to_token_stream(),
        Kind::Ref {
            mutable: false,
            void: true,
            ..
        } => quote_spanned!(span=> *const ::core::ffi::c_void),
        Kind::Ref {
            mutable: true,
            void: true,
            ..
        } => quote_spanned!(span=> *mut ::core::ffi::c_void),
        Kind::Value => {
            let ty = param.ty;
            quote_spanned!(span=> <#ty as #rt::CArg>::Raw)
        }
        Kind::Ref {
            mutable: false,
            elem,
            ..
        }
        | Kind::Slice {
            mutable: false,
            elem,
            ..
        } => quote_spanned!(span=> *const #elem),
        Kind::Ref {
            mutable: true,
            elem,
            ..
        }
        | Kind::Slice {
            mutable: true,
            elem,
            ..
        }
        | Kind::OutBuf { elem, .. } => quote_spanned!(span=> *mut #elem),
        Kind::CStr { .. } | Kind::Str { .. } | Kind::StrLen { .. } => {
            quote_spanned!(span=> *const ::core::ffi::c_char)
        }
        Kind::UserData { .. } if param.user_data_from.is_some() => return Vec::new(),
        Kind::UserData { .. } => quote_spanned!(span=> *mut ::core::ffi::c_void),
        Kind::Local { .. } => return Vec::new(),
    };
    let mut params = vec![quote!(#name: #pointer)];
    if let Some(Len::Next) = param.kind.len() {
        let len = len_ident(name);
        params.push(quote!(#len: usize));
    }
    params
}

/// The trampoline's parameter for the length of the slice `name`.
pub(super) fn len_ident(name: &Ident) -> Ident {
    Ident::new(&format!("{}_len", name.unraw()), Span::mixed_site())
}
