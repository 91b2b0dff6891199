//! Fail soft: on any error the user's item is emitted unchanged next to the
//! `compile_error!`s, so one mistake does not cascade into "cannot find
//! function" errors at every use of the item.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{FnArg, Item, ItemFn};

/// The user's tokens as written, plus every error.
pub(crate) fn soft(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut tokens = error.to_compile_error();
    tokens.extend(item);
    tokens
}

/// The user's fn with the `#[local]`, `#[len]`, `#[user_data]` and `#[void]` helper
/// attributes and a C-variadic `...` removed: rustc would report them too
/// ("cannot find attribute `local`", "only foreign functions may be
/// C-variadic") and bury the real error.
pub(crate) fn soft_fn(item: &ItemFn, error: syn::Error) -> TokenStream {
    let mut item = item.clone();
    if item.sig.variadic.take().is_some() && item.sig.inputs.trailing_punct() {
        item.sig.inputs.pop_punct();
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
