//! Everything a `#[c_callback]` fn must satisfy, checked at once: every
//! problem is reported, each at its own tokens.

use quote::ToTokens;
use syn::{GenericParam, Meta, ReturnType, Type, WherePredicate};

use super::ast::{Binding, Callback, Kind, Output, peel};
use super::attr::Options;
use super::ffi::{self, Position};
use crate::fail;

/// `options` is `None` when the options themselves had errors: the checks
/// that depend on them are skipped.
pub(crate) fn check(callback: &Callback, options: Option<&Options>) -> syn::Result<()> {
    let mut errors = Vec::new();
    signature(callback, &mut errors);
    params(callback, &mut errors);
    output(callback, options, &mut errors);
    match fail::combine(errors) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn signature(callback: &Callback, errors: &mut Vec<syn::Error>) {
    let sig = &callback.item.sig;
    let mut error = |tokens: &dyn ToTokens, message: &str| {
        errors.push(syn::Error::new_spanned(tokens, message));
    };
    if let Some(constness) = &sig.constness {
        error(
            constness,
            "#[c_callback] functions cannot be `const`; remove `const`",
        );
    }
    if let Some(asyncness) = &sig.asyncness {
        error(
            asyncness,
            "#[c_callback] functions cannot be `async`: C cannot poll a future; make it a plain \
             fn and block or spawn inside",
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        error(
            unsafety,
            "#[c_callback] functions cannot be `unsafe fn`: C callers cannot uphold a Rust \
             safety contract; make it safe and check the contract inside",
        );
    }
    if let Some(abi) = &sig.abi {
        if let Some(name) = &abi.name {
            if name.value() != "C" {
                error(
                    abi,
                    "#[c_callback] functions are always `extern \"C\"`; remove this ABI",
                );
            }
        }
    }
    for param in &sig.generics.params {
        match param {
            GenericParam::Lifetime(_) => {}
            GenericParam::Type(_) | GenericParam::Const(_) => error(
                param,
                "#[c_callback] functions cannot be generic: C needs one concrete function; \
                 write one callback per type",
            ),
        }
    }
    if let Some(clause) = &sig.generics.where_clause {
        for predicate in &clause.predicates {
            if let WherePredicate::Type(_) = predicate {
                error(
                    predicate,
                    "#[c_callback] functions cannot have type bounds: C needs one concrete \
                     function; remove the `where` clause",
                );
            }
        }
    }
    if let Some(variadic) = &sig.variadic {
        error(
            variadic,
            "#[c_callback] functions cannot be variadic; take a count and a pointer to the values",
        );
    }
    if let Some(receiver) = callback.receiver {
        error(
            receiver,
            "#[c_callback] goes on a free fn and cannot take `self`: C has no receiver; move the \
             fn out of the `impl` and take the value as a pointer parameter",
        );
    }
}

fn params(callback: &Callback, errors: &mut Vec<syn::Error>) {
    let mut local_types: Vec<String> = Vec::new();
    for param in &callback.params {
        if let Binding::Pattern(pat) = param.binding {
            errors.push(syn::Error::new_spanned(
                pat,
                "#[c_callback] parameters must be plain names; destructure inside the body",
            ));
        }
        for attr in &param.other_attrs {
            errors.push(syn::Error::new_spanned(
                attr,
                "#[c_callback] parameters take no attributes other than `#[local]`",
            ));
        }
        if let Some(local) = param.local {
            if !matches!(local.meta, Meta::Path(_)) {
                errors.push(syn::Error::new_spanned(
                    &local.meta,
                    "`#[local]` takes no arguments; write `#[local]`",
                ));
            }
            match param.kind {
                Kind::Local { elem } if ffi::find_impl_trait(elem).is_some() => {
                    errors.push(syn::Error::new_spanned(
                        elem,
                        "#[local] parameters name their type; `impl Trait` cannot be one",
                    ));
                }
                Kind::Local { elem } => {
                    let key = elem.to_token_stream().to_string();
                    if local_types.contains(&key) {
                        errors.push(syn::Error::new_spanned(
                            elem,
                            format!(
                                "two #[local] parameters of type `{key}`: a thread has one \
                                 `{key}`; take it once"
                            ),
                        ));
                    } else {
                        local_types.push(key);
                    }
                }
                _ => errors.push(syn::Error::new_spanned(
                    param.ty,
                    "#[local] parameters must be `&mut T` where `T: callgate::Local`",
                )),
            }
            continue;
        }
        errors.extend(ffi::check(param.ty, Position::Param));
    }
}

fn output(callback: &Callback, options: Option<&Options>, errors: &mut Vec<syn::Error>) {
    let ReturnType::Type(_, ty) = &callback.item.sig.output else {
        return;
    };
    if let Output::OpaqueResult(path) = callback.output {
        errors.push(syn::Error::new_spanned(
            path,
            "#[c_callback] reads the C return type from the `Result`'s arguments; spell them \
             out: `Result<T, E>`",
        ));
        return;
    }
    if let Some(impl_trait) = ffi::find_impl_trait(ty) {
        errors.push(syn::Error::new_spanned(
            impl_trait,
            "#[c_callback] functions cannot return `impl Trait`: C receives one concrete type; \
             name it",
        ));
        return;
    }
    let Some(c_type) = callback.output.c_type() else {
        return;
    };
    if let Some(error) = ffi::check(c_type, Position::Return) {
        errors.push(error);
        return;
    }
    let has_fallback = options.is_none_or(|o| o.on_panic.is_some() || o.on_error.is_some());
    if !has_fallback && !matches!(peel(c_type), Type::Ptr(_)) {
        errors.push(syn::Error::new_spanned(
            c_type,
            "#[c_callback] functions that return a value need `on_panic = VALUE` or \
             `on_error = VALUE`: what C receives when the body panics or fails",
        ));
    }
}
