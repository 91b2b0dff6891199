//! The options inside `#[c_callback(...)]`.

use proc_macro2::TokenStream;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Path};

use crate::args::{self, Arg, is_word};
use crate::fail;

const VALID: &str = "valid options are `export`, `local`, `on_panic`, `on_error`, `attach`, \
                     `gate`, `free` and `crate`";

pub(crate) struct Options {
    /// `export = "sym"`.
    pub export: Option<LitStr>,
    /// `local`: no exported symbol.
    pub local: bool,
    pub on_panic: Option<Fallback>,
    pub on_error: Option<Fallback>,
    pub attach: Attach,
    pub gate: Gate,
    /// `free = path`: the free function of an owned result, declared with
    /// `callgate::export_free!`.
    pub free: Option<Path>,
    /// `crate = path`.
    pub krate: Option<Path>,
}

/// What C receives when the body panics or fails.
pub(crate) enum Fallback {
    Value(Expr),
    /// `abort`: print the message and abort the process.
    Abort,
}

#[derive(Clone, Copy)]
pub(crate) enum Attach {
    Bound,
    PerCall,
}

#[derive(Clone, Copy)]
pub(crate) enum Gate {
    Wait,
    Fail,
    Skip,
}

/// Parses the attribute's arguments, collecting every problem.
pub(crate) fn parse(args: TokenStream) -> syn::Result<Options> {
    let mut options = Options {
        export: None,
        local: false,
        on_panic: None,
        on_error: None,
        attach: Attach::Bound,
        gate: Gate::Wait,
        free: None,
        krate: None,
    };
    let mut errors = Vec::new();
    let args = args::parse(args, "c_callback", &mut errors);
    for (index, Arg { key, value }) in args.iter().enumerate() {
        if let Err(error) = option(&mut options, key, value.clone()) {
            errors.push(error);
            continue;
        }
        let other = match key.to_string().as_str() {
            "local" => "export",
            "export" => "local",
            _ => continue,
        };
        if args[..index].iter().any(|earlier| earlier.key == other) {
            errors.push(syn::Error::new(
                key.span(),
                "#[c_callback] options `local` and `export` exclude each other: a `local` \
                 callback has no symbol; remove one of them",
            ));
        }
    }
    match fail::combine(errors) {
        Some(error) => Err(error),
        None => Ok(options),
    }
}

/// Stores one `key` or `key = value` option.
fn option(options: &mut Options, key: &Ident, value: Option<Expr>) -> syn::Result<()> {
    let name = key.to_string();
    match name.as_str() {
        "local" => {
            if let Some(value) = value {
                return Err(syn::Error::new_spanned(
                    value,
                    "#[c_callback] option `local` takes no value; write `local`",
                ));
            }
            options.local = true;
        }
        "export" => match value {
            Some(Expr::Lit(ExprLit {
                lit: Lit::Str(symbol),
                ..
            })) => {
                let text = symbol.value();
                if text.is_empty() || text.contains('\0') {
                    return Err(syn::Error::new(
                        symbol.span(),
                        "#[c_callback] option `export` needs a non-empty symbol name without NUL",
                    ));
                }
                options.export = Some(symbol);
            }
            other => return Err(needs(key, other, "a string: `export = \"symbol_name\"`")),
        },
        "on_panic" | "on_error" => {
            let Some(value) = value else {
                return Err(needs(key, None, "a value: `= EXPR` (or `= abort`)"));
            };
            let fallback = if is_word(&value, "abort") {
                Fallback::Abort
            } else {
                Fallback::Value(value)
            };
            if name == "on_panic" {
                options.on_panic = Some(fallback);
            } else {
                options.on_error = Some(fallback);
            }
        }
        "attach" => match &value {
            Some(v) if is_word(v, "bound") => options.attach = Attach::Bound,
            Some(v) if is_word(v, "per_call") => options.attach = Attach::PerCall,
            _ => {
                return Err(needs(
                    key,
                    value,
                    "`bound` or `per_call`: `attach = per_call`",
                ));
            }
        },
        "gate" => match &value {
            Some(v) if is_word(v, "wait") => options.gate = Gate::Wait,
            Some(v) if is_word(v, "fail") => options.gate = Gate::Fail,
            Some(v) if is_word(v, "skip") => options.gate = Gate::Skip,
            _ => return Err(needs(key, value, "`wait`, `fail` or `skip`: `gate = fail`")),
        },
        "free" => match args::plain_path(value.as_ref()) {
            Some(path) => options.free = Some(path),
            None => {
                return Err(needs(
                    key,
                    value,
                    "the name of a free function declared with `callgate::export_free!`: \
                     `free = mylib_string_free`",
                ));
            }
        },
        "crate" => match args::plain_path(value.as_ref()) {
            Some(path) => options.krate = Some(path),
            None => return Err(needs(key, value, "a path: `crate = ::callgate`")),
        },
        _ => {
            return Err(syn::Error::new(
                key.span(),
                format!("unknown #[c_callback] option `{name}`; {VALID}"),
            ));
        }
    }
    Ok(())
}

/// "option `key` takes ...", spanned at the bad value or else at the key.
fn needs(key: &Ident, value: Option<Expr>, what: &str) -> syn::Error {
    let message = format!("#[c_callback] option `{key}` takes {what}");
    match value {
        Some(value) => syn::Error::new_spanned(value, message),
        None => syn::Error::new(key.span(), message),
    }
}
