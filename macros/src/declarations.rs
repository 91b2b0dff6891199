//! `__declarations!`: the declaration records of `extern "C"` fns exported
//! by hand, for `export_error_api!`. Not public API.
//!
//! ```text
//! __declarations! {
//!     crate = $crate, prefix = mylib;
//!     /// Clears the calling thread's last error message.
//!     fn clear_last_error();
//! }
//! ```
//!
//! records `void mylib_clear_last_error(void)`, the C declaration derived
//! from the Rust signature as for a `#[c_callback]`, with the `///` docs
//! given. It also checks that `clear_last_error`, a fn in scope, has that
//! signature, so a record cannot drift from the fn it describes.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{FnArg, ForeignItemFn, Ident, Path, Token};

use crate::callback::decl;

struct Declarations {
    krate: Path,
    prefix: Ident,
    functions: Vec<ForeignItemFn>,
}

impl Parse for Declarations {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        input.parse::<Token![crate]>()?;
        input.parse::<Token![=]>()?;
        let krate = Path::parse_mod_style(input)?;
        input.parse::<Token![,]>()?;
        let key = Ident::parse_any(input)?;
        if key != "prefix" {
            return Err(syn::Error::new(key.span(), "expected `prefix = IDENT`"));
        }
        input.parse::<Token![=]>()?;
        let prefix = Ident::parse_any(input)?;
        input.parse::<Token![;]>()?;
        let mut functions = Vec::new();
        while !input.is_empty() {
            let function: ForeignItemFn = input.parse()?;
            if let Some(receiver) = function.sig.receiver() {
                return Err(syn::Error::new_spanned(
                    receiver,
                    "an exported fn takes no `self`",
                ));
            }
            if let Some(variadic) = &function.sig.variadic {
                return Err(syn::Error::new_spanned(
                    variadic,
                    "an exported fn is not variadic",
                ));
            }
            functions.push(function);
        }
        Ok(Declarations {
            krate,
            prefix,
            functions,
        })
    }
}

pub(crate) fn declarations(input: TokenStream) -> TokenStream {
    match syn::parse2::<Declarations>(input) {
        Ok(declarations) => expand(&declarations),
        Err(error) => error.to_compile_error(),
    }
}

fn expand(declarations: &Declarations) -> TokenStream {
    let krate = &declarations.krate;
    let rt = quote!(#krate::__private);
    let prefix = declarations.prefix.unraw();
    declarations
        .functions
        .iter()
        .map(|function| {
            let sig = &function.sig;
            let ident = &sig.ident;
            let name = format!("{prefix}_{}", ident.unraw());
            let note = decl::export_record(name, sig, &function.attrs).note_static(&rt);
            let unsafety = &sig.unsafety;
            let params = sig.inputs.iter().filter_map(|input| match input {
                FnArg::Typed(param) => Some(&param.ty),
                FnArg::Receiver(_) => None,
            });
            let output = &sig.output;
            quote! {
                const _: () = {
                    #note
                };
                const _: #unsafety extern "C" fn(#(#params),*) #output = #ident;
            }
        })
        .collect()
}
