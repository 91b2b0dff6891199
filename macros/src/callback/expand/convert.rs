//! The statements that open the trampoline's call: the check that no two
//! pointer arguments overlap (`disjoint`), then, parameter by parameter, the
//! conversion of what C passed into what the body takes (`convert`).

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::signature::len_ident;
use crate::callback::ast::{
    Binding, Callback, Kind, Len, Param, is_plain, is_pointer_array, peel, takes_every_value,
};

/// The check, before any argument is converted, that no two pointer
/// arguments overlap where the body may write one of them (through a
/// `&mut`, a mutable slice, an `OutBuf` or `&mut` user data): C may call
/// `f(buf, buf)`, and the body's references would alias. `None` where the
/// callback has fewer than two pointer arguments or none it writes.
pub(super) fn disjoint(
    callback: &Callback,
    names: &[Ident],
    rt: &TokenStream,
) -> Option<TokenStream> {
    let mut regions = Vec::new();
    let mut writes = false;
    for (param, name) in callback.params.iter().zip(names) {
        let label = label(param);
        let count = || len(param, name, rt);
        let (region, writable) = match param.kind {
            Kind::Ref { mutable, elem, .. } => (
                quote!(#rt::Region::values(#name as *const #elem, 1, #mutable, #label)),
                mutable,
            ),
            Kind::UserData { mutable, elem, .. } => {
                let pointer = user_data_pointer(param, name);
                (
                    quote!(#rt::Region::values(#pointer.cast::<#elem>().cast_const(), 1, #mutable, #label)),
                    mutable,
                )
            }
            Kind::Slice { mutable, elem, .. } => {
                let count = count();
                (
                    quote!(#rt::Region::values(#name as *const #elem, #count, #mutable, #label)),
                    mutable,
                )
            }
            Kind::OutBuf { elem, .. } => {
                let count = count();
                (
                    quote!(#rt::Region::values(#name as *const #elem, #count, true, #label)),
                    true,
                )
            }
            Kind::StrLen { .. } => {
                let count = count();
                (
                    quote!(#rt::Region::values(#name, #count, false, #label)),
                    false,
                )
            }
            // SAFETY (of the generated block): the trampoline's contract: a
            // non-null string argument is NUL-terminated.
            Kind::CStr { .. } | Kind::Str { .. } => (
                quote!(unsafe { #rt::Region::c_string(#name, #label) }),
                false,
            ),
            Kind::Value | Kind::Local { .. } => continue,
        };
        regions.push(region);
        writes |= writable;
    }
    (writes && regions.len() >= 2).then(|| quote!(#rt::check_disjoint(&[#(#regions),*])?;))
}

/// How the runtime's messages name `param`: as written, `_` for a pattern.
fn label(param: &Param) -> String {
    match param.binding {
        Binding::Ident(ident) => ident.unraw().to_string(),
        Binding::Wild | Binding::Pattern(_) => "_".to_owned(),
    }
}

/// The length of the (pointer, length) parameter `name`: its own `_len`
/// parameter, or the `#[len = count]` integer, checked.
fn len(param: &Param, name: &Ident, rt: &TokenStream) -> TokenStream {
    match param.kind.len() {
        Some(Len::Param(count)) => {
            let label = count.unraw().to_string();
            quote!(#rt::len_arg(#count, #label)?)
        }
        _ => len_ident(name).into_token_stream(),
    }
}

/// The statement that turns what C passed into what the body takes.
pub(super) fn convert(
    param: &Param,
    name: &Ident,
    local: &Ident,
    frame: &Ident,
    rt: &TokenStream,
) -> TokenStream {
    let label = label(param);
    let function = match param.kind {
        Kind::Value if takes_every_value(param.ty) => return TokenStream::new(),
        Kind::Value => {
            // C passed the `Raw` value; an enum's is checked here.
            let ty = param.ty;
            let from_c = quote_spanned!(ty.span()=> <#ty as #rt::CArg>::from_c);
            return quote!(let #name = #from_c(#name, #label)?;);
        }
        Kind::Local { elem } => {
            // The `Local` bound is checked here, so a missing impl is
            // reported at the user's type.
            let span = elem.span();
            // One key per parameter, next to the callback: the type's
            // index, looked up on the first call.
            let local_call = quote_spanned! {span=> {
                static __CALLGATE_LOCAL_KEY: #rt::LocalKey<#elem> = #rt::LocalKey::new();
                #frame.local(&__CALLGATE_LOCAL_KEY)
            }};
            return quote!(let mut #local = #local_call?;);
        }
        Kind::Ref {
            mutable: false,
            nullable: false,
            ..
        } => "ref_arg",
        Kind::Ref {
            mutable: true,
            nullable: false,
            ..
        } => "mut_arg",
        Kind::Ref {
            mutable: false,
            nullable: true,
            ..
        } => "opt_ref_arg",
        Kind::Ref {
            mutable: true,
            nullable: true,
            ..
        } => "opt_mut_arg",
        Kind::CStr { nullable: false } => "cstr_arg",
        Kind::CStr { nullable: true } => "opt_cstr_arg",
        Kind::Str { nullable: false } => "str_arg",
        Kind::Str { nullable: true } => "opt_str_arg",
        Kind::Slice { .. } | Kind::StrLen { .. } | Kind::OutBuf { .. } => {
            return convert_with_len(param, name, &label, rt);
        }
        Kind::UserData {
            mutable,
            nullable,
            elem,
        } => {
            let function = match (mutable, nullable) {
                (false, false) => "user_data_ref",
                (true, false) => "user_data_mut",
                (false, true) => "opt_user_data_ref",
                (true, true) => "opt_user_data_mut",
            };
            let function = Ident::new(function, Span::call_site());
            // The `Sync` / `Send` bound is named first, at the user's type,
            // so that a type lacking it is reported there, once.
            let (bound, check) = if mutable {
                (quote!(ExclusiveUserData), quote!(exclusive))
            } else {
                (quote!(SharedUserData), quote!(shared))
            };
            let span = elem.span();
            let check = quote_spanned!(span=> let _ = <#elem as #rt::#bound>::#check;);
            let typed = quote_spanned!(span=> #rt::#function::<#elem>);
            let pointer = user_data_pointer(param, name);
            // SAFETY (of the generated block): as below; the pointer (the
            // argument, or what `from = …` gave) is to the `T` the user
            // data was made from.
            return quote! {
                #check
                let #name = unsafe { #typed(#pointer, #label) }?;
            };
        }
    };
    let function = Ident::new(function, Span::call_site());
    // A `#[void]` parameter's `void *` is a pointer to `elem`: typed here,
    // then checked as any reference is.
    let cast = match param.kind {
        Kind::Ref {
            void: true, elem, ..
        } => quote_spanned!(elem.span()=> let #name = #name.cast::<#elem>();),
        _ => TokenStream::new(),
    };
    let stored = match param.kind {
        Kind::Ref { nullable, elem, .. } => check_stored(
            name,
            elem,
            nullable,
            &label,
            rt,
            |v| quote!(::core::ptr::from_ref(&**#v), 1),
        ),
        _ => TokenStream::new(),
    };
    // SAFETY (of the generated block): the trampoline is an `unsafe fn` whose
    // contract is that each pointer is NULL or valid for the call; the
    // runtime checks NULL and alignment.
    quote! {
        #cast
        let #name = unsafe { #rt::#function(#name, #label) }?;
        #stored
    }
}

/// The check that the values a reference or slice parameter `name` points
/// to are valid `elem`s (a `#[derive(CEnum)]` enum's are checked; see
/// `Stored`); `first_len` makes the array's `first, len` from `v`, the
/// reference to the converted parameter's reference.
fn check_stored(
    name: &Ident,
    elem: &Type,
    nullable: bool,
    label: &str,
    rt: &TokenStream,
    first_len: impl Fn(&Ident) -> TokenStream,
) -> TokenStream {
    let v = Ident::new("__callgate_stored", Span::mixed_site());
    let first_len = first_len(&v);
    let check = quote! {
        // SAFETY: `v` is the reference the conversion just made from what C
        // passed: its values are readable for the call.
        unsafe { (&#rt::Stored::<#elem>::new()).check(#first_len, #label) }?;
    };
    let check = if nullable {
        quote!(if let ::core::option::Option::Some(#v) = &#name { #check })
    } else {
        quote!({ let #v = &#name; #check })
    };
    quote! {
        {
            #[allow(unused_imports)]
            use #rt::{CheckedStored as _, UncheckedStored as _};
            #check
        }
    }
}

/// The statement for a (pointer, length) parameter.
fn convert_with_len(param: &Param, name: &Ident, label: &str, rt: &TokenStream) -> TokenStream {
    let function = match param.kind {
        Kind::Slice {
            mutable: false,
            nullable: false,
            ..
        } => "slice_arg",
        Kind::Slice {
            mutable: true,
            nullable: false,
            ..
        } => "mut_slice_arg",
        Kind::Slice {
            mutable: false,
            nullable: true,
            ..
        } => "opt_slice_arg",
        Kind::Slice {
            mutable: true,
            nullable: true,
            ..
        } => "opt_mut_slice_arg",
        Kind::StrLen {
            nullable: false, ..
        } => "str_len_arg",
        Kind::StrLen { nullable: true, .. } => "opt_str_len_arg",
        // A `char *` buffer holds text (NUL-terminated), any other elements.
        Kind::OutBuf { elem, .. } if is_c_char(elem) => "out_text_arg",
        _ => "out_buf_arg",
    };
    let function = Ident::new(function, Span::call_site());
    let len = len(param, name, rt);
    let pointer = match param.kind {
        Kind::Slice {
            mutable: false,
            elem,
            ..
        } if is_pointer_array(elem) => quote!(#name.cast_const()),
        _ => name.to_token_stream(),
    };
    let stored = match param.kind {
        Kind::Slice { nullable, elem, .. } => check_stored(
            name,
            elem,
            nullable,
            label,
            rt,
            |v| quote!(#v.as_ptr(), #v.len()),
        ),
        _ => TokenStream::new(),
    };
    // SAFETY (of the generated block): as in `convert`; the runtime checks
    // NULL, alignment and the length.
    quote! {
        let #name = unsafe { #rt::#function(#pointer, #len, #label) }?;
        #stored
    }
}

/// The `void *` of the user data parameter `param` (named `name` in the
/// trampoline): its argument, or the local holding what its
/// `from = …` expression gave.
fn user_data_pointer(param: &Param, name: &Ident) -> TokenStream {
    match param.user_data_from {
        Some(_) => user_data_from_ident().into_token_stream(),
        None => name.to_token_stream(),
    }
}

/// The local holding the `void *` of a `#[user_data(from = …)]`
/// parameter (a fn has at most one).
pub(super) fn user_data_from_ident() -> Ident {
    Ident::new("__callgate_user_data", Span::mixed_site())
}

/// `c_char`, however it is reached (`c_char`, `ffi::c_char`, `libc::c_char`).
fn is_c_char(ty: &Type) -> bool {
    matches!(peel(ty), Type::Path(path) if is_plain(path, "c_char"))
}
