//! `callgate::export_free!(name: Type)`: the exported, NULL-safe function
//! that frees the owned results of one type, which `#[c_callback]`s name
//! with `free = name`.
//!
//! The runtime's `export_free!` forwards here with its `$crate` first, so
//! the generated code names the runtime however the user's crate reaches it.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Attribute, Ident, Token, Type, Visibility};

use crate::callback::ast::{self, Owned};
use crate::callback::decl;

struct FreeFn {
    /// The runtime's path (`$crate` of the runtime's `export_free!`).
    krate: Ident,
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    ty: Type,
}

impl Parse for FreeFn {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let krate = Ident::parse_any(input)?;
        input.parse::<Token![;]>()?;
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty = input.parse()?;
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
        }
        if !input.is_empty() {
            return Err(input.error(
                "callgate::export_free! declares one free function: \
                 `export_free!(pub mylib_string_free: CString)`",
            ));
        }
        Ok(FreeFn {
            krate,
            attrs,
            vis,
            name,
            ty,
        })
    }
}

pub(crate) fn export_free(input: TokenStream) -> TokenStream {
    let free: FreeFn = match syn::parse2(input) {
        Ok(free) => free,
        Err(error) => return error.to_compile_error(),
    };
    let Some(owned) = ast::owned(&free.ty) else {
        return syn::Error::new_spanned(
            &free.ty,
            "callgate::export_free! frees an owned result: `CString`, `Box<T>`, `Vec<T>` or \
             `Box<[T]>`",
        )
        .to_compile_error();
    };
    expand(&free, owned)
}

fn expand(free: &FreeFn, owned: Owned) -> TokenStream {
    let FreeFn {
        krate,
        attrs,
        vis,
        name,
        ty,
    } = free;
    let rt = quote!(#krate::__private);
    let symbol = name.unraw().to_string();
    let decl = decl::free_record(symbol.clone(), owned, attrs).note_static(&rt);
    // Everything but the docs also applies to the type-namespace twin.
    let shared_attrs: Vec<&Attribute> = attrs
        .iter()
        .filter(|attr| !attr.path().is_ident("doc"))
        .collect();
    let inner = ast::generic_arg(ty, "Option").unwrap_or(ty);
    let (signature, body) = match owned {
        Owned::Value(_) => {
            let raw = match ast::generic_arg(inner, "Box") {
                Some(boxed) => quote!(*mut #boxed),
                None => quote!(*mut ::core::ffi::c_char),
            };
            (
                quote!(value: #raw),
                quote!(#rt::free_value::<<#ty as #rt::Owned>::Freed>(value, #symbol)),
            )
        }
        Owned::Slice { elem, .. } => (
            quote!(ptr: *mut #elem, len: usize),
            quote!(#rt::free_slice::<#elem>(ptr, len, #symbol)),
        ),
    };
    // At the user's type: a callback whose `free` names this function for
    // another type is told what this one frees, and where.
    let frees = quote_spanned! {ty.span()=>
        #(#shared_attrs)*
        impl #rt::Frees<<#ty as #rt::Owned>::Freed> for #name {}
    };
    // C may call the free function on any thread, so what it drops must be
    // `Send`; checked at the user's type, for rustc's own message.
    let contents = match owned {
        Owned::Value(_) => ast::generic_arg(inner, "Box"),
        Owned::Slice { elem, .. } => Some(elem),
    };
    let send_check = contents.map(|contents| {
        quote_spanned! {contents.span()=>
            const _: () = {
                fn __callgate_sent(value: &#contents) -> &dyn ::core::marker::Send {
                    value
                }
            };
        }
    });
    let (summary, obligation) = decl::free_docs(owned);
    let separator = (!attrs.is_empty()).then(|| quote!(#[doc = ""]));
    quote! {
        #(#attrs)*
        #separator
        #[doc = #summary]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = ""]
        #[doc = #obligation]
        #[unsafe(no_mangle)]
        #vis unsafe extern "C" fn #name(#signature) {
            // The C declaration, for `callgate-header`.
            #decl
            // SAFETY: forwarded caller obligation; the contents are `Send`
            // (checked below).
            unsafe { #body }
        }

        #send_check

        /// What `#[c_callback(free = …)]` checks the returned type against.
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #(#shared_attrs)*
        #vis struct #name {}

        #frees
    }
}
