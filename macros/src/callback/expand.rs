//! Code generation for a validated `#[c_callback]` fn. Cannot fail.
//!
//! The user's fn becomes `__callgate_body`, nested inside an `extern "C"` fn of
//! the same name whose parameters are what C passes. The trampoline converts
//! them and hands everything else to `__private::call`: the gate, the thread's
//! context, `catch_unwind`, errors and fallbacks live once, in the runtime.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ItemFn, Type};

use super::ast::{
    Binding, Callback, Kind, Len, Output, Owned, Param, RESULT_LEN, is_plain, is_pointer_array,
    peel, takes_every_value,
};
use super::attr::{Attach, Fallback, Gate, Options};
use super::decl;
use crate::args;

pub(crate) fn expand(callback: &Callback, options: &Options) -> TokenStream {
    let item = callback.item;
    let rt = args::runtime(options.krate.as_ref());
    let krate = args::crate_root(options.krate.as_ref());
    let vis = &item.vis;
    let ident = &item.sig.ident;
    let name = ident.unraw().to_string();
    let generics = &item.sig.generics;
    let where_clause = &generics.where_clause;

    let attrs = Attrs::split(&item.attrs);
    let outer_attrs = &attrs.outer;
    let inner_attrs = &attrs.inner;
    let safety_doc = (callback.is_unsafe() && !attrs.has_safety_doc).then(|| {
        quote! {
            ///
            /// # Safety
            ///
            /// Each pointer argument is NULL or valid for the duration of the call.
        }
    });
    let link = match (&options.export, options.local) {
        (_, true) => None,
        (Some(symbol), false) => Some(quote!(#[unsafe(export_name = #symbol)])),
        (None, false) => Some(quote!(#[unsafe(no_mangle)])),
    };
    let deny_improper =
        (!attrs.allows_improper_ctypes).then(|| quote!(#[deny(improper_ctypes_definitions)]));
    let unsafety = callback.is_unsafe().then(|| quote!(unsafe));
    // The user's code in the trampoline is the fallback expressions, where
    // the parameters are the raw values C passed: reading through one,
    // possibly NULL, takes an `unsafe` block of the user's own, not the
    // `unsafe fn`'s body.
    let deny_unsafe_ops = callback
        .is_unsafe()
        .then(|| quote!(#[deny(unsafe_op_in_unsafe_fn)]));

    let frame = Ident::new("__callgate_frame", Span::mixed_site());
    let names: Vec<Ident> = callback
        .params
        .iter()
        .enumerate()
        .map(|(index, param)| match param.binding {
            Binding::Ident(ident) => ident.clone(),
            Binding::Wild | Binding::Pattern(_) => {
                format_ident!("__callgate_arg_{}", index, span = Span::mixed_site())
            }
        })
        .collect();
    let locals: Vec<Ident> = (0..callback.params.len())
        .map(|index| format_ident!("__callgate_local_{}", index, span = Span::mixed_site()))
        .collect();

    let result_len = Ident::new(RESULT_LEN, Span::mixed_site());
    let mut c_params: Vec<TokenStream> = callback
        .params
        .iter()
        .zip(&names)
        .flat_map(|(param, name)| c_params(param, name, &rt))
        .collect();
    // A callback with one `#[local]` parameter gets it from `call_local`,
    // whose fast path finds it ready before the call starts; with more,
    // each is looked up in the body.
    let local_params: Vec<(&Type, &Ident)> = callback
        .params
        .iter()
        .zip(&locals)
        .filter_map(|(param, local)| match &param.kind {
            Kind::Local { elem } => Some((*elem, local)),
            _ => None,
        })
        .collect();
    let single_local = match local_params.as_slice() {
        [single] => Some(*single),
        _ => None,
    };
    let distinct_locals = distinct_locals(&local_params);
    let mut conversions: Vec<TokenStream> = callback
        .params
        .iter()
        .zip(&names)
        .zip(&locals)
        .filter(|((param, _), _)| {
            single_local.is_none() || !matches!(param.kind, Kind::Local { .. })
        })
        .map(|((param, name), local)| convert(param, name, local, &frame, &rt))
        .collect();
    if let Some(check) = disjoint(callback, &names, &rt) {
        conversions.insert(0, check);
    }
    // Evaluated first, over the arguments as C passed them (before any is
    // converted and shadowed), spanned at the user's expression so that a
    // type error lands there.
    if let Some(from) = callback
        .params
        .iter()
        .find_map(|p| p.user_data_from.as_ref())
    {
        let pointer = user_data_from_ident();
        let ty = quote_spanned!(from.span()=> *mut ::core::ffi::c_void);
        conversions.insert(0, quote!(let #pointer: #ty = #from;));
    }
    let args = callback
        .params
        .iter()
        .zip(&names)
        .zip(&locals)
        .map(|((param, name), local)| match param.kind {
            Kind::Local { .. } => quote!(&mut *#local),
            _ => quote!(#name),
        });
    let body_params = item.sig.inputs.iter().map(|input| match input {
        FnArg::Typed(typed) => {
            let (pat, ty) = (&typed.pat, &typed.ty);
            quote!(#pat: #ty)
        }
        FnArg::Receiver(receiver) => receiver.to_token_stream(),
    });
    let body_output = &item.sig.output;
    let block = &item.block;
    // A parameter named by `#[len = count]` is used as a length, and one
    // named in a fallback or a `#[user_data(from = …)]` expression is used
    // there, even if the body never reads it.
    let mut used: Vec<&Ident> = callback
        .params
        .iter()
        .filter_map(|param| match param.kind.len() {
            Some(Len::Param(count)) => Some(count),
            _ => None,
        })
        .collect();
    let mut expressions: Vec<TokenStream> = [&options.on_error, &options.on_panic]
        .into_iter()
        .filter_map(|fallback| match fallback {
            Some(Fallback::Value(value)) => Some(value.to_token_stream()),
            _ => None,
        })
        .collect();
    expressions.extend(
        callback
            .params
            .iter()
            .filter_map(|param| param.user_data_from.as_ref())
            .map(ToTokens::to_token_stream),
    );
    for param in callback.params.iter().filter(|param| param.is_c_param()) {
        if let Binding::Ident(ident) = param.binding {
            if expressions.iter().any(|tokens| mentions(tokens, ident)) {
                used.push(ident);
            }
        }
    }
    let mut seen = Vec::new();
    used.retain(|ident| {
        let first = !seen.contains(ident);
        seen.push(*ident);
        first
    });
    let block = if used.is_empty() {
        block.to_token_stream()
    } else {
        quote!({ #(let _ = &#used;)* #block })
    };

    let wrap = match callback.output {
        Output::Result { .. } => quote!(#rt::from_result),
        _ => quote!(#rt::ok),
    };
    let mut body_call = quote!(#wrap(__callgate_body(#(#args),*)));
    let mut free_check = None;
    let (c_return, default_fallback) = match callback.owned {
        None => {
            let c_output = callback.output.c_type();
            let default = match c_output.map(peel) {
                Some(Type::Ptr(ptr)) if ptr.mutability.is_some() => {
                    quote!(::core::ptr::null_mut)
                }
                Some(Type::Ptr(_)) => quote!(::core::ptr::null),
                _ => quote!(|| ()),
            };
            (c_output.map(ToTokens::to_token_stream), default)
        }
        Some(owned) => {
            let ty = owned.ty();
            let span = ty.span();
            if let Some(free) = &options.free {
                // A path in a nested item: a typo is "cannot find type",
                // with no suggestion to make the callback generic.
                let check = quote_spanned! {free.span()=>
                    const _: () = <#free as #rt::Frees<<#ty as #rt::Owned>::Freed>>::FREES;
                };
                free_check = Some(check);
            }
            match owned {
                Owned::Value(_) => {
                    body_call = quote!(#body_call.map(#rt::owned_value));
                    let raw = quote_spanned!(span=> <#ty as #rt::OwnedValue>::Raw);
                    let null = quote!(|| <#ty as #rt::OwnedValue>::NULL);
                    (Some(raw), null)
                }
                Owned::Slice { .. } => {
                    let len = Ident::new("__callgate_result_len", Span::mixed_site());
                    // Converted first, so `*result_len` is 0 if anything fails.
                    // SAFETY (of the generated block): the trampoline's
                    // contract (an `unsafe fn` for Rust callers, the C
                    // declaration's for C): `result_len` is null or valid for
                    // writing a `size_t` nothing else accesses during the call;
                    // the runtime checks null and alignment.
                    conversions.insert(
                        0,
                        quote! {
                            let #len = unsafe { #rt::result_len_arg(#result_len, #RESULT_LEN) }?;
                        },
                    );
                    body_call = quote!(#body_call.map(|value| #rt::owned_slice(value, #len)));
                    c_params.push(quote_spanned!(span=> #result_len: *mut usize));
                    let raw = quote_spanned!(span=> *mut <#ty as #rt::OwnedSlice>::Elem);
                    // SAFETY (of the generated block): as for
                    // `result_len_arg` above, whose contract this shares.
                    let null = quote!(|| {
                        unsafe { #rt::clear_result_len(#result_len) };
                        ::core::ptr::null_mut()
                    });
                    (Some(raw), null)
                }
            }
        }
    };
    let ffi_checks = element_checks(callback, attrs.allows_improper_ctypes);
    let fallbacks = Fallbacks::new(options, c_return.as_ref(), default_fallback);
    let c_return = c_return.map(|ty| quote!(-> #ty));
    let (on_error, on_panic) = (&fallbacks.on_error, &fallbacks.on_panic);
    let fallback_setup = &fallbacks.setup;
    let (error_policy, panic_policy) = (fallbacks.error_policy, fallbacks.panic_policy);
    let attach = match options.attach {
        Attach::Bound => quote!(Bound),
        Attach::PerCall => quote!(PerCall),
    };
    let gate = match options.gate {
        Gate::Wait => quote!(Wait),
        Gate::Fail => quote!(Fail),
        Gate::Skip => quote!(Skip),
    };
    let decl = decl::record(callback, options).note_static(&rt);
    let frame_pat = if callback
        .params
        .iter()
        .any(|p| matches!(p.kind, Kind::Local { .. }))
    {
        frame.to_token_stream()
    } else {
        quote!(_)
    };

    // Each `#[local]` type names `Local` at the user's type, first: a
    // missing impl is reported there, once, rather than at the runtime
    // function that needs it.
    let local_checks = local_params
        .iter()
        .map(|(elem, _)| quote_spanned!(elem.span()=> let _ = <#elem as #krate::Local>::bind;));
    let call = match single_local {
        Some((elem, local)) => {
            // The `Local` bound is checked by `call_local`, at the type.
            let span = elem.span();
            let key = quote_spanned! {span=>
                static __CALLGATE_LOCAL_KEY: #rt::LocalKey<#elem> = #rt::LocalKey::new();
            };
            let call_local = quote_spanned!(span=> #rt::call_local::<_, #elem>);
            quote! {
                #key
                #call_local(
                    &__CALLGATE_SITE,
                    &__CALLGATE_LOCAL_KEY,
                    #on_error,
                    #on_panic,
                    move |_: &#rt::Frame, mut #local: #rt::LocalRef<'_, #elem>| {
                        #(#conversions)*
                        #body_call
                    },
                )
            }
        }
        None => quote! {
            #rt::call(&__CALLGATE_SITE, #on_error, #on_panic, move |#frame_pat: &#rt::Frame| {
                #(#conversions)*
                #body_call
            })
        },
    };

    let table_type = options.local.then(|| {
        let pointer = quote!(#unsafety extern "C" fn(#(#c_params),*) #c_return);
        local_pointer_type(item, &pointer)
    });

    quote! {
        #table_type
        #(#outer_attrs)*
        #safety_doc
        #link
        #deny_improper
        #deny_unsafe_ops
        #vis #unsafety extern "C" fn #ident #generics (#(#c_params),*) #c_return #where_clause {
            #(#inner_attrs)*
            #[cfg_attr(not(debug_assertions), inline(always))]
            fn __callgate_body #generics (#(#body_params),*) #body_output #where_clause #block

            static __CALLGATE_SITE: #rt::Site = #rt::Site {
                name: #name,
                attach: #rt::Attach::#attach,
                gate: #rt::GatePolicy::#gate,
                on_panic: #rt::OnFailure::#panic_policy,
                on_error: #rt::OnFailure::#error_policy,
            };
            // The C declaration, for `callgate-header`.
            #decl
            #free_check
            #distinct_locals
            #ffi_checks
            #fallback_setup
            #(#local_checks)*
            #call
        }
    }
}

/// For two or more `#[local]` parameters, a check that their types differ
/// where the macro cannot see it (one type under two paths, or through an
/// alias): each implements one trait, so a type named twice is a
/// conflicting implementation (E0119) at its second parameter. (The same
/// path written twice has its own error in `valid`.)
fn distinct_locals(local_params: &[(&Type, &Ident)]) -> Option<TokenStream> {
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

/// For a `local` callback, its function-pointer type under its own name in
/// the type namespace, which `callgate::export_table!` names for the
/// table's field (as `export_free!` does for a free function). Left out
/// when the C signature names lifetimes, which a type alias cannot.
fn local_pointer_type(item: &ItemFn, pointer: &TokenStream) -> Option<TokenStream> {
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
fn c_params(param: &Param, name: &Ident, rt: &TokenStream) -> Vec<TokenStream> {
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

/// The check, before any argument is converted, that no two pointer
/// arguments overlap where the body may write one of them (through a
/// `&mut`, a mutable slice, an `OutBuf` or `&mut` user data): C may call
/// `f(buf, buf)`, and the body's references would alias. `None` where the
/// callback has fewer than two pointer arguments or none it writes.
fn disjoint(callback: &Callback, names: &[Ident], rt: &TokenStream) -> Option<TokenStream> {
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

/// The trampoline's parameter for the length of the slice `name`.
fn len_ident(name: &Ident) -> Ident {
    Ident::new(&format!("{}_len", name.unraw()), Span::mixed_site())
}

/// Asks rustc whether the elements of the slices, `OutBuf`s and owned
/// arrays are FFI-safe by value, as C reads and writes them in place: each
/// element type becomes the parameter of an `extern "C" fn` that denies
/// `improper_ctypes_definitions` (unless the user allowed it), spanned at
/// the user's type.
fn element_checks(callback: &Callback, allowed: bool) -> TokenStream {
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

/// Whether `tokens` hold the identifier `ident`.
fn mentions(tokens: &TokenStream, ident: &Ident) -> bool {
    tokens.clone().into_iter().any(|token| match token {
        TokenTree::Ident(other) => other == *ident,
        TokenTree::Group(group) => mentions(&group.stream(), ident),
        TokenTree::Punct(_) | TokenTree::Literal(_) => false,
    })
}

fn mentions_lifetime(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        TokenTree::Punct(punct) => punct.as_char() == '\'',
        TokenTree::Group(group) => mentions_lifetime(group.stream()),
        TokenTree::Ident(_) | TokenTree::Literal(_) => false,
    })
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
fn convert(
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
fn user_data_from_ident() -> Ident {
    Ident::new("__callgate_user_data", Span::mixed_site())
}

/// `c_char`, however it is reached (`c_char`, `ffi::c_char`, `libc::c_char`).
fn is_c_char(ty: &Type) -> bool {
    matches!(peel(ty), Type::Path(path) if is_plain(path, "c_char"))
}

/// The `on_error` / `on_panic` closures and the policies the `Site` records.
struct Fallbacks {
    /// `let` statements defining the closures.
    setup: TokenStream,
    on_error: TokenStream,
    on_panic: TokenStream,
    error_policy: TokenStream,
    panic_policy: TokenStream,
}

impl Fallbacks {
    /// `c_return` is the C return type (`None` for `()`), `default` the
    /// fallback closure when neither `on_error` nor `on_panic` is given.
    fn new(options: &Options, c_return: Option<&TokenStream>, default: TokenStream) -> Self {
        let on_error = Ident::new("__callgate_on_error", Span::mixed_site());
        let on_panic = Ident::new("__callgate_on_panic", Span::mixed_site());
        let ret = match c_return {
            Some(ty) => ty.clone(),
            None => quote!(()),
        };
        let value = |ident: &Ident, expr: &dyn ToTokens| quote!(let #ident = || -> #ret { #expr };);
        let unreachable = quote!(|| ::core::unreachable!("callgate aborts instead"));
        let (abort, ret_policy) = (quote!(Abort), quote!(Return));
        match (&options.on_error, &options.on_panic) {
            (Some(Fallback::Value(error)), Some(Fallback::Value(panic))) => {
                let mut setup = value(&on_error, error);
                setup.extend(value(&on_panic, panic));
                Fallbacks {
                    setup,
                    on_error: on_error.to_token_stream(),
                    on_panic: on_panic.to_token_stream(),
                    error_policy: ret_policy.clone(),
                    panic_policy: ret_policy,
                }
            }
            (Some(Fallback::Value(error)), Some(Fallback::Abort)) => Fallbacks {
                setup: value(&on_error, error),
                on_error: on_error.to_token_stream(),
                on_panic: unreachable,
                error_policy: ret_policy,
                panic_policy: abort,
            },
            (Some(Fallback::Abort), Some(Fallback::Value(panic))) => Fallbacks {
                setup: value(&on_panic, panic),
                on_error: unreachable,
                on_panic: on_panic.to_token_stream(),
                error_policy: abort,
                panic_policy: ret_policy,
            },
            // One value serves both: a closure that captures nothing is `Copy`.
            (Some(Fallback::Value(shared)), None) | (None, Some(Fallback::Value(shared))) => {
                Fallbacks {
                    setup: value(&on_error, shared),
                    on_error: on_error.to_token_stream(),
                    on_panic: on_error.to_token_stream(),
                    error_policy: ret_policy.clone(),
                    panic_policy: ret_policy,
                }
            }
            (Some(Fallback::Abort), _) | (_, Some(Fallback::Abort)) => Fallbacks {
                setup: TokenStream::new(),
                on_error: unreachable.clone(),
                on_panic: unreachable,
                error_policy: abort.clone(),
                panic_policy: abort,
            },
            // Validation allows no fallback only for `()`, pointers and owned
            // results.
            (None, None) => Fallbacks {
                setup: TokenStream::new(),
                on_error: default.clone(),
                on_panic: default,
                error_policy: ret_policy.clone(),
                panic_policy: ret_policy,
            },
        }
    }
}

/// The user's attributes, split between the C-callable item and the body.
struct Attrs<'a> {
    /// Docs, `cfg`, `must_use`, `inline` … : about the item C and Rust call.
    outer: Vec<&'a Attribute>,
    /// Lint levels: about the user's code, which is the body.
    inner: Vec<&'a Attribute>,
    /// The user allowed `improper_ctypes_definitions` (an opaque type they
    /// know C only passes back): that lint level goes on the C-callable item
    /// and is not denied.
    allows_improper_ctypes: bool,
    has_safety_doc: bool,
}

impl<'a> Attrs<'a> {
    fn split(attrs: &'a [Attribute]) -> Self {
        let mut split = Attrs {
            outer: Vec::new(),
            inner: Vec::new(),
            allows_improper_ctypes: false,
            has_safety_doc: false,
        };
        for attr in attrs {
            let path = attr.path();
            let is_lint = ["allow", "expect", "warn", "deny", "forbid"]
                .iter()
                .any(|level| path.is_ident(level));
            let tokens = attr.meta.to_token_stream().to_string();
            if path.is_ident("doc") && tokens.contains("# Safety") {
                split.has_safety_doc = true;
            }
            if is_lint && tokens.contains("improper_ctypes_definitions") {
                split.allows_improper_ctypes = true;
                split.outer.push(attr);
            } else if is_lint {
                split.inner.push(attr);
            } else {
                split.outer.push(attr);
            }
        }
        split
    }
}
