//! `#[derive(CValue)]` and `#[derive(CEnum)]`: the types a `#[c_callback]`
//! parameter may have by value. A `CValue` struct takes every value C can
//! pass, which its fields prove; a `CEnum` enum arrives as the integer of
//! its `repr` and is checked against its discriminants at every call.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, Meta, Token};

use crate::args::{self, Arg};
use crate::{fail, type_record};

/// The integer reprs an enum C passes may have (not 128-bit: no C type).
const INTEGER_REPRS: [&str; 10] = [
    "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "usize", "isize",
];

/// The idents of the item's `#[repr(…)]` attributes (`C`, `u8`,
/// `transparent`, `packed`, `align` …).
fn reprs(attrs: &[Attribute]) -> Vec<Ident> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("repr"))
        .filter_map(|attr| {
            attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .filter_map(|meta| meta.path().get_ident().cloned())
        .collect()
}

/// The runtime's path: `::callgate`, or `path` from the item's
/// `#[callgate(crate = path)]`, for a crate that reaches callgate through a
/// re-export (as `#[c_callback(crate = path)]`).
fn krate(attrs: &[Attribute], derive: &str) -> syn::Result<TokenStream> {
    let mut errors = Vec::new();
    let mut krate = None;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("callgate")) {
        let tokens = match &attr.meta {
            Meta::List(list) => list.tokens.clone(),
            _ => {
                errors.push(syn::Error::new_spanned(
                    attr,
                    format!("`#[callgate]` on a `#[derive({derive})]` type takes `crate = path`"),
                ));
                continue;
            }
        };
        for Arg { key, value } in args::parse(tokens, "callgate", &mut errors) {
            if key != "crate" {
                // The header's options: `type_record` reads them, and
                // reports an unknown one.
                continue;
            }
            match args::plain_path(value.as_ref()) {
                Some(path) => krate = Some(path),
                None => {
                    let message = "#[callgate] option `crate` takes a path: `crate = ::callgate`";
                    errors.push(match value {
                        Some(value) => syn::Error::new_spanned(value, message),
                        None => syn::Error::new(key.span(), message),
                    });
                }
            }
        }
    }
    match fail::combine(errors) {
        Some(error) => Err(error),
        None => Ok(args::crate_root(krate.as_ref())),
    }
}

/// `tokens`, every one at `span`.
fn respan(tokens: &TokenStream, span: Span) -> TokenStream {
    tokens
        .clone()
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respan(&group.stream(), span));
                inner.set_span(span);
                token = TokenTree::Group(inner);
            }
            token.set_span(span);
            token
        })
        .collect()
}

pub(crate) fn c_value(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let krate = match krate(&input.attrs, "CValue") {
        Ok(krate) => krate,
        Err(error) => return error.to_compile_error(),
    };
    let data = match &input.data {
        Data::Struct(data) => data,
        Data::Enum(data) => {
            return syn::Error::new_spanned(
                data.enum_token,
                "#[derive(CValue)] is for structs: C may pass an integer that is no variant of \
                 an enum; derive `callgate::CEnum` instead, which checks it",
            )
            .to_compile_error();
        }
        Data::Union(data) => {
            return syn::Error::new_spanned(
                data.union_token,
                "#[derive(CValue)] does not support unions; pass a `#[repr(C)]` struct, or the \
                 bytes (`[u8; N]` inside a struct) and convert them in the body",
            )
            .to_compile_error();
        }
    };
    let reprs = reprs(&input.attrs);
    if !reprs
        .iter()
        .any(|repr| repr == "C" || repr == "transparent")
    {
        return syn::Error::new_spanned(
            data.struct_token,
            "#[derive(CValue)] needs a layout C shares: add `#[repr(C)]` (or \
             `#[repr(transparent)]` for one field)",
        )
        .to_compile_error();
    }
    let record = match type_record::c_value(&input, data, &reprs, &quote!(#krate::__private)) {
        Ok(record) => record,
        Err(error) => return error.to_compile_error(),
    };
    let ident = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let mut predicates: Vec<TokenStream> = where_clause
        .map(|clause| clause.predicates.iter().map(|p| quote!(#p)).collect())
        .unwrap_or_default();
    // One bound per field (on an array's element: the array takes every
    // bit pattern when it does), spanned at its type, so a field that is
    // not a `CValue` is reported there, by name.
    predicates.extend(data.fields.iter().map(|field| {
        let ty = type_record::array_element(&field.ty);
        let krate = respan(&krate, ty.span());
        quote_spanned!(ty.span()=> #ty: #krate::CValue)
    }));
    quote! {
        #record
        // SAFETY: the struct has C's layout (`repr(C)` or `repr(transparent)`)
        // and every field takes every bit pattern (the bounds below), so
        // every bit pattern of the struct, its padding aside, is a valid value.
        unsafe impl #impl_generics #krate::CValue for #ident #ty_generics
        where
            #(#predicates,)*
        {
        }
    }
}

pub(crate) fn c_enum(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let data = match &input.data {
        Data::Enum(data) => data,
        Data::Struct(data) => {
            return syn::Error::new_spanned(
                data.struct_token,
                "#[derive(CEnum)] is for fieldless enums; derive `callgate::CValue` for a \
                 `#[repr(C)]` struct",
            )
            .to_compile_error();
        }
        Data::Union(data) => {
            return syn::Error::new_spanned(
                data.union_token,
                "#[derive(CEnum)] is for fieldless enums, not unions",
            )
            .to_compile_error();
        }
    };
    let mut errors = Vec::new();
    let krate = krate(&input.attrs, "CEnum").unwrap_or_else(|error| {
        errors.push(error);
        TokenStream::new()
    });
    if !input.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &input.generics,
            "#[derive(CEnum)] does not support generic enums; C passes one concrete integer",
        ));
    }
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) {
            errors.push(syn::Error::new_spanned(
                &variant.fields,
                format!(
                    "#[derive(CEnum)] is for fieldless enums: C passes an integer, which \
                     cannot carry the fields of `{}`; pass them separately, or a pointer to \
                     the data",
                    variant.ident
                ),
            ));
        }
    }
    if data.variants.is_empty() {
        errors.push(syn::Error::new_spanned(
            data.enum_token,
            "#[derive(CEnum)] needs at least one variant: no integer C passes could be an \
             enum without variants",
        ));
    }
    let reprs = reprs(&input.attrs);
    let integer = reprs
        .iter()
        .find(|repr| INTEGER_REPRS.iter().any(|name| repr == name));
    let is_c = reprs.iter().any(|repr| repr == "C");
    if integer.is_none() && !is_c {
        errors.push(syn::Error::new_spanned(
            data.enum_token,
            "#[derive(CEnum)] needs the integer C passes: add `#[repr(i32)]` (or another \
             integer type up to 64 bits, or `#[repr(C)]` for C's `int`)",
        ));
    }
    let rt = quote!(#krate::__private);
    let record = type_record::c_enum(&input, data, integer, &rt);
    errors.extend(record.as_ref().err().cloned());
    if let Some(error) = fail::combine(errors) {
        return error.to_compile_error();
    }

    let record = record.unwrap_or_default();
    let ident = &input.ident;
    let name = ident.unraw().to_string();
    let raw = match integer {
        Some(integer) => quote!(#integer),
        None => quote!(::core::ffi::c_int),
    };
    let size_check = integer.is_none().then(|| {
        quote! {
            const _: () = #krate::__private::check_c_enum_size(::core::mem::size_of::<#ident>());
        }
    });
    let variants: Vec<&Ident> = data.variants.iter().map(|variant| &variant.ident).collect();
    let consts: Vec<Ident> = (0..variants.len())
        .map(|index| format_ident!("__CALLGATE_VARIANT_{}", index, span = Span::mixed_site()))
        .collect();
    let raw_ident = Ident::new("__callgate_raw", Span::mixed_site());
    let name_ident = Ident::new("__callgate_name", Span::mixed_site());
    quote! {
        #size_check
        #record
        impl #krate::__private::CArg for #ident {
            type Raw = #raw;

            #[inline(always)]
            fn from_c(
                #raw_ident: #raw,
                #name_ident: &'static str,
            ) -> ::core::result::Result<Self, #krate::__private::Failure> {
                #(const #consts: #raw = #ident::#variants as #raw;)*
                match #raw_ident {
                    #(#consts => ::core::result::Result::Ok(#ident::#variants),)*
                    _ => ::core::result::Result::Err(#krate::__private::not_a_variant(
                        #name_ident,
                        #name,
                        #raw_ident,
                        &[#(#consts),*],
                    )),
                }
            }
        }
    }
}
