//! Fail soft: on any error the user's item is emitted unchanged next to the
//! `compile_error!`s, so one mistake does not cascade into "cannot find
//! function" errors at every use of the item.

use proc_macro2::{Ident, Span, TokenStream};
use quote::ToTokens;
use syn::{FnArg, GenericArgument, Item, ItemFn, Lifetime, PathArguments, ReturnType, Type};

/// The user's tokens as written, plus every error.
pub(crate) fn soft(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut tokens = error.to_compile_error();
    tokens.extend(item);
    tokens
}

/// The user's fn with the `#[local]`, `#[len]`, `#[user_data]` and `#[void]`
/// helper attributes and a C-variadic `...` removed, and the elided lifetimes of a
/// return type that has none to borrow from made `'static`: rustc would
/// report them too ("cannot find attribute `local`", "only foreign
/// functions may be C-variadic", "missing lifetime specifier" with a
/// suggestion to return `String`) and bury the real error.
pub(crate) fn soft_fn(item: &ItemFn, error: syn::Error) -> TokenStream {
    let mut item = item.clone();
    if item.sig.variadic.take().is_some() && item.sig.inputs.trailing_punct() {
        item.sig.inputs.pop_punct();
    }
    // Elision takes `&self`'s lifetime, or else the only one of the inputs.
    let elides = item.sig.receiver().is_some()
        || item
            .sig
            .inputs
            .iter()
            .map(|input| match input {
                FnArg::Typed(param) => lifetimes(&param.ty),
                FnArg::Receiver(_) => 0,
            })
            .sum::<usize>()
            == 1;
    if let ReturnType::Type(_, output) = &mut item.sig.output {
        if !elides {
            make_static(output);
        }
    }
    for input in &mut item.sig.inputs {
        if let FnArg::Typed(param) = input {
            param.attrs.retain(|attr| {
                !["local", "len", "user_data", "void"]
                    .iter()
                    .any(|helper| attr.path().is_ident(helper))
            });
        }
    }
    soft(item.into_token_stream(), error)
}

/// Folds a list of errors into one, `None` when there are none.
pub(crate) fn combine(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut all, next| {
        all.combine(next);
        all
    })
}

/// The keyword of an item that is not a fn, and what to call it in a message.
pub(crate) fn describe(item: &Item) -> (&dyn ToTokens, &'static str) {
    match item {
        Item::Struct(item) => (&item.struct_token, "a `struct`"),
        Item::Enum(item) => (&item.enum_token, "an `enum`"),
        Item::Union(item) => (&item.union_token, "a `union`"),
        Item::Impl(item) => (&item.impl_token, "an `impl` block"),
        Item::Trait(item) => (&item.trait_token, "a `trait`"),
        Item::Mod(item) => (&item.mod_token, "a `mod`"),
        Item::Static(item) => (&item.static_token, "a `static`"),
        Item::Const(item) => (&item.const_token, "a `const`"),
        Item::ForeignMod(item) => (&item.abi, "an `extern` block"),
        Item::Type(item) => (&item.type_token, "a type alias"),
        Item::Use(item) => (&item.use_token, "a `use`"),
        Item::Fn(item) => (&item.sig.fn_token, "a fn"),
        other => (other, "this item (a fn needs a body)"),
    }
}

/// How many lifetimes, elided or named, `ty` holds where rustc's elision
/// counts them (not inside a function pointer type).
fn lifetimes(ty: &Type) -> usize {
    let mut ty = ty.clone();
    let mut slots = Vec::new();
    each_lifetime(&mut ty, &mut slots);
    slots.len()
}

/// Makes each elided lifetime (`&T`, `'_`) in `ty` `'static`.
fn make_static(ty: &mut Type) {
    let mut slots = Vec::new();
    each_lifetime(ty, &mut slots);
    for slot in slots {
        match slot {
            LifetimeSlot::Reference(lifetime) => {
                if lifetime.as_ref().is_none_or(|l| l.ident == "_") {
                    *lifetime = Some(Lifetime::new("'static", Span::call_site()));
                }
            }
            LifetimeSlot::Argument(lifetime) => {
                if lifetime.ident == "_" {
                    lifetime.ident = Ident::new("static", lifetime.ident.span());
                }
            }
        }
    }
}

enum LifetimeSlot<'a> {
    Reference(&'a mut Option<Lifetime>),
    Argument(&'a mut Lifetime),
}

fn each_lifetime<'a>(ty: &'a mut Type, slots: &mut Vec<LifetimeSlot<'a>>) {
    match ty {
        Type::Reference(reference) => {
            slots.push(LifetimeSlot::Reference(&mut reference.lifetime));
            each_lifetime(&mut reference.elem, slots);
        }
        Type::Paren(inner) => each_lifetime(&mut inner.elem, slots),
        Type::Group(inner) => each_lifetime(&mut inner.elem, slots),
        Type::Slice(inner) => each_lifetime(&mut inner.elem, slots),
        Type::Array(inner) => each_lifetime(&mut inner.elem, slots),
        Type::Ptr(inner) => each_lifetime(&mut inner.elem, slots),
        Type::Tuple(tuple) => tuple
            .elems
            .iter_mut()
            .for_each(|elem| each_lifetime(elem, slots)),
        Type::Path(path) => {
            for segment in &mut path.path.segments {
                if let PathArguments::AngleBracketed(arguments) = &mut segment.arguments {
                    for argument in &mut arguments.args {
                        match argument {
                            GenericArgument::Lifetime(lifetime) => {
                                slots.push(LifetimeSlot::Argument(lifetime));
                            }
                            GenericArgument::Type(ty) => each_lifetime(ty, slots),
                            _ => {}
                        }
                    }
                }
            }
        }
        _ => {}
    }
}
