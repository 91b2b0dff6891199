//! `#[c_callback]`: parse → validate → expand.

pub(crate) mod ast;
mod attr;
pub(crate) mod decl;
mod expand;
mod ffi;
mod valid;

#[cfg(test)]
mod snapshot;

use proc_macro2::TokenStream;
use syn::Item;

use crate::fail;

pub(crate) fn c_callback(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: Item = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => return fail::soft(input, error),
    };
    let options = attr::parse(args);
    let Item::Fn(function) = &item else {
        let mut error = not_a_fn(&item);
        if let Err(more) = options {
            error.combine(more);
        }
        return fail::soft(input, error);
    };
    let callback = ast::Callback::from_syn(function);
    let checked = valid::check(&callback, options.as_ref().ok());
    match (options, checked) {
        (Ok(options), Ok(())) => expand::expand(&callback, &options),
        (Err(error), Ok(())) | (Ok(_), Err(error)) => fail::soft_fn(function, error),
        (Err(mut error), Err(more)) => {
            error.combine(more);
            fail::soft_fn(function, error)
        }
    }
}

/// `#[c_callback]` on a struct, an impl block, a fn without a body …
fn not_a_fn(item: &Item) -> syn::Error {
    let (tokens, what) = fail::describe(item);
    syn::Error::new_spanned(
        tokens,
        format!("#[c_callback] goes on a free `fn`, not on {what}"),
    )
}
