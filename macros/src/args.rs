//! The `key, key = EXPR, …` argument lists both attributes take.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{Expr, ExprPath, Ident, Path, Token};

/// One `key` or `key = value` argument.
pub(crate) struct Arg {
    pub key: Ident,
    pub value: Option<Expr>,
}

/// Parses the argument list of `#[attribute(...)]`. A key given twice is
/// reported in `errors` (spanned at the repetition) and dropped, so every
/// returned key is distinct; a syntax error is reported there too.
pub(crate) fn parse(args: TokenStream, attribute: &str, errors: &mut Vec<syn::Error>) -> Vec<Arg> {
    let mut parsed: Vec<Arg> = Vec::new();
    let parser = |input: ParseStream| {
        while !input.is_empty() {
            let key = Ident::parse_any(input)?;
            let value = if input.peek(Token![=]) {
                input.parse::<Token![=]>()?;
                Some(input.parse::<Expr>()?)
            } else {
                None
            };
            if !input.is_empty() {
                input.parse::<Token![,]>()?;
            }
            if parsed.iter().any(|earlier| earlier.key == key) {
                errors.push(syn::Error::new(
                    key.span(),
                    format!("#[{attribute}] option `{key}` is given twice; keep one"),
                ));
                continue;
            }
            parsed.push(Arg { key, value });
        }
        Ok(())
    };
    if let Err(error) = parser.parse2(args) {
        errors.push(error);
    }
    parsed
}

/// Whether `expr` is the single identifier `word`.
pub(crate) fn is_word(expr: &Expr, word: &str) -> bool {
    matches!(expr, Expr::Path(ExprPath { qself: None, path, attrs }) if attrs.is_empty() && path.is_ident(word))
}

/// The path of `crate = path` or `free = path`, if `value` is a plain path.
pub(crate) fn plain_path(value: Option<&Expr>) -> Option<Path> {
    match value {
        Some(Expr::Path(ExprPath {
            qself: None,
            path,
            attrs,
        })) if attrs.is_empty() => Some(path.clone()),
        _ => None,
    }
}

/// How generated code names the runtime's hidden module: `path::__private`
/// for `crate = path`, `::callgate::__private` without it (and for the
/// derives, which take no options).
pub(crate) fn runtime(krate: Option<&Path>) -> TokenStream {
    let root = crate_root(krate);
    quote!(#root::__private)
}

/// The runtime crate's path: `krate` (a `crate = path` option), or
/// `::callgate`.
pub(crate) fn crate_root(krate: Option<&Path>) -> TokenStream {
    match krate {
        Some(path) => quote!(#path),
        None => quote!(::callgate),
    }
}
