//! Code generation for a validated `#[c_callback]` fn. Cannot fail.
//!
//! The user's fn becomes `__callgate_body`, nested inside an `extern "C"` fn of
//! the same name whose parameters are what C passes. The trampoline converts
//! them and hands everything else to `__private::call`: the gate, the thread's
//! context, `catch_unwind`, errors and fallbacks live once, in the runtime.
//!
//! This file assembles the trampoline from its parts: its C parameters
//! (`signature`), the statements converting what C passed (`convert`), what
//! C receives on an error or a panic (`fallbacks`), the compile-time checks
//! nested in it (`checks`) and its C declaration (`super::decl`).

mod checks;
mod convert;
mod fallbacks;
mod signature;

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, Type};

use super::ast::{Binding, Callback, Kind, Len, Output, Owned, RESULT_LEN, peel};
use super::attr::{Attach, Fallback, Gate, Options};
use super::decl;
use crate::args;
use checks::{distinct_locals, element_checks};
use convert::{convert, disjoint, user_data_from_ident};
use fallbacks::Fallbacks;
use signature::{c_params, local_pointer_type};

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
