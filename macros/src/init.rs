//! `#[callgate::init]`: keep the user's fn and register a load-time
//! constructor that runs it, with the gate armed before any C code can call
//! a callback. On ELF an earlier constructor arms it (`__private::arm_init`
//! in `.init_array.00101`, which the loader runs before the plain
//! `.init_array`), so every init of the library is counted before the first
//! one starts and the gate cannot open between two of them; elsewhere the
//! one constructor arms and starts (`__private::run_init`).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{Item, ItemFn, Path, ReturnType, Type};

use crate::args::{self, Arg};
use crate::callback::ast::is_unit;
use crate::{fail, targets};

struct Options {
    background: bool,
    krate: Option<Path>,
}

pub(crate) fn init(args: TokenStream, input: TokenStream) -> TokenStream {
    let item: Item = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => return fail::soft(input, error),
    };
    let options = parse_options(args);
    let Item::Fn(function) = &item else {
        let (tokens, what) = fail::describe(&item);
        let mut error = syn::Error::new_spanned(
            tokens,
            format!("#[callgate::init] goes on a `fn()` or `fn() -> Result<(), E>`, not on {what}"),
        );
        if let Err(more) = options {
            error.combine(more);
        }
        return fail::soft(input, error);
    };
    let checked = check(function);
    match (options, checked) {
        (Ok(options), Ok(returns_result)) => expand(function, &options, returns_result),
        (Err(error), Ok(_)) | (Ok(_), Err(error)) => fail::soft(input, error),
        (Err(mut error), Err(more)) => {
            error.combine(more);
            fail::soft(input, error)
        }
    }
}

fn parse_options(args: TokenStream) -> syn::Result<Options> {
    let mut options = Options {
        background: false,
        krate: None,
    };
    let mut errors = Vec::new();
    for Arg { key, value } in args::parse(args, "callgate::init", &mut errors) {
        match (key.to_string().as_str(), value) {
            ("background", None) => options.background = true,
            ("background", Some(value)) => errors.push(syn::Error::new_spanned(
                value,
                "#[callgate::init] option `background` takes no value; write `background`",
            )),
            ("crate", value) => match args::plain_path(value.as_ref()) {
                Some(path) => options.krate = Some(path),
                None => errors.push(syn::Error::new(
                    key.span(),
                    "#[callgate::init] option `crate` takes a path: `crate = ::callgate`",
                )),
            },
            (other, _) => errors.push(syn::Error::new(
                key.span(),
                format!(
                    "unknown #[callgate::init] option `{other}`; valid options are \
                     `background` and `crate`"
                ),
            )),
        }
    }
    match fail::combine(errors) {
        Some(error) => Err(error),
        None => Ok(options),
    }
}

/// Validates the signature; `Ok(true)` when it returns a `Result`.
fn check(function: &ItemFn) -> syn::Result<bool> {
    let sig = &function.sig;
    let mut errors = Vec::new();
    let mut error = |tokens: &dyn ToTokens, message: &str| {
        errors.push(syn::Error::new_spanned(tokens, message));
    };
    if let Some(asyncness) = &sig.asyncness {
        error(
            asyncness,
            "#[callgate::init] functions cannot be `async`: they run at load time, before any \
             executor; make it a plain fn",
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        error(
            unsafety,
            "#[callgate::init] functions cannot be `unsafe fn`: nobody calls them who could \
             uphold a contract; make it safe",
        );
    }
    if !sig.generics.params.is_empty() {
        error(
            &sig.generics,
            "#[callgate::init] functions cannot be generic; remove the parameters",
        );
    }
    if !sig.inputs.is_empty() || sig.variadic.is_some() {
        error(
            &sig.inputs,
            "#[callgate::init] functions take no parameters; they run when the library is loaded",
        );
    }
    let returns_result = match &sig.output {
        ReturnType::Default => false,
        ReturnType::Type(_, ty) => match result_ok(ty) {
            Some(Some(ok)) if is_unit(ok) => true,
            Some(None) => true,
            Some(Some(ok)) => {
                error(
                    ok,
                    "#[callgate::init] functions return `()` or `Result<(), E>`; nobody \
                     receives this value",
                );
                true
            }
            None if is_unit(ty) => false,
            None => {
                error(
                    ty,
                    "#[callgate::init] functions return `()` or `Result<(), E>` where \
                     `E: Display`",
                );
                false
            }
        },
    };
    match fail::combine(errors) {
        Some(error) => Err(error),
        None => Ok(returns_result),
    }
}

/// `Some(Some(T))` for `Result<T, ..>`, `Some(None)` for an alias without
/// arguments (`io::Result` etc. are taken as `Result<(), E>`), `None` for
/// anything else.
fn result_ok(ty: &Type) -> Option<Option<&Type>> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if path.qself.is_some() || last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return Some(None);
    };
    Some(args.args.iter().find_map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    }))
}

fn expand(function: &ItemFn, options: &Options, returns_result: bool) -> TokenStream {
    let rt = args::runtime(options.krate.as_ref());
    let ident = &function.sig.ident;
    let name = ident.unraw().to_string();
    let background = options.background;
    let elf = targets::elf();
    let call = if returns_result {
        quote!(#rt::from_result(#ident()))
    } else {
        quote!(#rt::ok(#ident()))
    };
    let cfg = function
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"));
    quote! {
        #function

        #(#cfg)*
        const _: () = {
            fn __callgate_init_body() -> ::core::result::Result<(), #rt::Failure> {
                #call
            }

            extern "C" fn __callgate_init_ctor() {
                if ::core::cfg!(#elf) {
                    // SAFETY: `__callgate_init_arm` below armed this init
                    // once, with the same `background`, and this
                    // constructor is its only start.
                    unsafe { #rt::start_init(#name, #background, __callgate_init_body) };
                } else {
                    #rt::run_init(#name, #background, __callgate_init_body);
                }
            }

            // Runs before every plain `.init_array` constructor of the
            // object: all its inits are armed before the first one starts.
            #[cfg(#elf)]
            const _: () = {
                extern "C" fn __callgate_init_arm() {
                    #rt::arm_init(#background);
                }

                #[used]
                #[unsafe(link_section = ".init_array.00101")]
                static __CALLGATE_INIT_ARM: extern "C" fn() = __callgate_init_arm;
            };

            // The loader calls every pointer in these sections before
            // `dlopen` (or `main`) returns.
            #[used]
            #[cfg_attr(
                #elf,
                unsafe(link_section = ".init_array")
            )]
            #[cfg_attr(target_vendor = "apple", unsafe(link_section = "__DATA,__mod_init_func"))]
            #[cfg_attr(windows, unsafe(link_section = ".CRT$XCU"))]
            static __CALLGATE_INIT: extern "C" fn() = __callgate_init_ctor;

            #[cfg(not(any(
                #elf,
                target_vendor = "apple",
                windows,
            )))]
            ::core::compile_error!("#[callgate::init] needs load-time constructors, which this target does not have");
        };
    }
}
