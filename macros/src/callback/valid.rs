//! Everything a `#[c_callback]` fn must satisfy, checked at once: every
//! problem is reported, each at its own tokens.
//!
//! This file checks the fn's signature and its return type, and runs every
//! check (`check`); the parameters' checks are `params`'s.

mod params;

use quote::ToTokens;
use syn::{
    Attribute, GenericArgument, GenericParam, Lifetime, Meta, PathArguments, ReturnType, Type,
    WherePredicate,
};

use super::ast::{Callback, Output, Owned, peel};
use super::attr::{Fallback, Options};
use super::ffi::{self, Position};
use crate::fail;
use params::{c_names, params};

/// `options` is `None` when the options themselves had errors: the checks
/// that depend on them are skipped.
pub(crate) fn check(callback: &Callback, options: Option<&Options>) -> syn::Result<()> {
    let mut errors = Vec::new();
    signature(callback, &mut errors);
    params(callback, &mut errors);
    c_names(callback, &mut errors);
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
            GenericParam::Lifetime(lifetime) => error(
                lifetime,
                "#[c_callback] functions cannot name lifetimes: C's pointers are valid only for \
                 the call, and a lifetime shared by two parameters could let the body keep one \
                 past it; remove the parameter and elide the lifetimes (`&T`, `OutBuf<'_, T>`)",
            ),
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
    for attr in &callback.item.attrs {
        if let Some(name) = symbol_attribute(attr) {
            error(
                attr,
                &format!(
                    "#[c_callback] exports the function under its own name itself; remove \
                     `#[{name}]` and write `#[c_callback(export = \"symbol\")]` for another \
                     name, or `#[c_callback(local)]` to export none"
                ),
            );
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
    if let Some(owned) = callback.owned {
        owned_output(owned, options, errors);
        return;
    }
    if let Some(free) = options.and_then(|options| options.free.as_ref()) {
        errors.push(syn::Error::new_spanned(
            free,
            "`free` names the function that frees an owned result (`CString`, `Box<T>`, \
             `Vec<T>`, `Box<[T]>`), and this fn returns none; remove it",
        ));
    }
    let Some(c_type) = callback.output.c_type() else {
        return;
    };
    // A type that cannot cross at all (`&str`) is told so before its
    // lifetime is: `&'static str` would not do either.
    if let Some(error) = ffi::check(c_type, Position::Return) {
        errors.push(error);
        return;
    }
    if let Some(lifetime) = returned_borrow(c_type) {
        errors.push(lifetime);
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

/// An owned result needs its free function, fails with NULL rather than a
/// fallback value, and holds FFI-safe elements if it is an array.
fn owned_output(owned: Owned, options: Option<&Options>, errors: &mut Vec<syn::Error>) {
    if let Owned::Slice { elem, .. } = owned {
        errors.extend(ffi::check_element(elem));
    }
    let Some(options) = options else { return };
    if options.free.is_none() {
        errors.push(syn::Error::new_spanned(
            owned.ty(),
            "#[c_callback] functions that return an owned value hand C memory that only Rust can \
             free: declare the free function with `callgate::export_free!(name: Type)` and name \
             it with `#[c_callback(free = name)]`",
        ));
    }
    for fallback in [&options.on_error, &options.on_panic] {
        if let Some(Fallback::Value(value)) = fallback {
            errors.push(syn::Error::new_spanned(
                value,
                "#[c_callback] functions that return an owned value return NULL when they \
                 fail; remove this value (`abort` is allowed)",
            ));
        }
    }
}

/// The lifetimes other than `'_` that `ty` names (not those of a
/// function pointer type's own signature).
fn named_lifetimes(ty: &Type) -> Vec<&Lifetime> {
    let mut found = Vec::new();
    each_type(ty, &mut |ty| match ty {
        Type::Reference(reference) => found.extend(&reference.lifetime),
        Type::Path(path) => {
            for segment in &path.path.segments {
                if let PathArguments::AngleBracketed(arguments) = &segment.arguments {
                    for argument in &arguments.args {
                        if let GenericArgument::Lifetime(lifetime) = argument {
                            found.push(lifetime);
                        }
                    }
                }
            }
        }
        _ => {}
    });
    found.retain(|lifetime| lifetime.ident != "_");
    found
}

/// Calls `visit` with `ty` and each type written inside it (not inside a
/// function pointer type's own signature).
fn each_type<'a>(ty: &'a Type, visit: &mut impl FnMut(&'a Type)) {
    visit(ty);
    match ty {
        Type::Reference(reference) => each_type(&reference.elem, visit),
        Type::Paren(paren) => each_type(&paren.elem, visit),
        Type::Group(group) => each_type(&group.elem, visit),
        Type::Slice(slice) => each_type(&slice.elem, visit),
        Type::Array(array) => each_type(&array.elem, visit),
        Type::Ptr(pointer) => each_type(&pointer.elem, visit),
        Type::Tuple(tuple) => tuple.elems.iter().for_each(|elem| each_type(elem, visit)),
        Type::Path(path) => {
            if let Some(qself) = &path.qself {
                each_type(&qself.ty, visit);
            }
            for segment in &path.path.segments {
                if let PathArguments::AngleBracketed(arguments) = &segment.arguments {
                    for argument in &arguments.args {
                        if let GenericArgument::Type(ty) = argument {
                            each_type(ty, visit);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// An error for a reference in the C return type `c_type` that is not
/// `'static`: the trampoline's own parameters are raw pointers, so an elided
/// (or `'_`) lifetime has nothing to borrow from, and C keeps what it gets.
fn returned_borrow(c_type: &Type) -> Option<syn::Error> {
    let mut references = Vec::new();
    each_type(c_type, &mut |ty| {
        if let Type::Reference(reference) = ty {
            references.push(reference);
        }
    });
    references
        .into_iter()
        .find(|reference| {
            reference
                .lifetime
                .as_ref()
                .is_none_or(|lifetime| lifetime.ident != "static")
        })
        .map(|reference| {
            syn::Error::new_spanned(
                reference,
                "a reference returned to C must be `&'static T`: C keeps the pointer after the \
                 call returns, when nothing borrowed for the call is valid any more; return \
                 `&'static T`, or a raw pointer (`*const T`)",
            )
        })
}

/// `no_mangle` or `export_name` where `attr` is one of them, written alone
/// or inside `unsafe(…)`: an attribute choosing the symbol, which the
/// expansion already sets (or, for `local`, leaves out on purpose).
fn symbol_attribute(attr: &Attribute) -> Option<&'static str> {
    let named = |path: &syn::Path| {
        ["no_mangle", "export_name"]
            .into_iter()
            .find(|name| path.is_ident(name))
    };
    if let Some(name) = named(attr.path()) {
        return Some(name);
    }
    if !attr.path().is_ident("unsafe") {
        return None;
    }
    let Meta::List(list) = &attr.meta else {
        return None;
    };
    let inner: Meta = list.parse_args().ok()?;
    named(inner.path())
}
