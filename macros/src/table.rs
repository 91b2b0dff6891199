//! `callgate::export_table!`: an exported, read-only `#[repr(C)]` struct of
//! the function pointers of `local` callbacks, so a C host gets them from
//! one symbol (or the generated header's `extern const`) instead of
//! hand-written getter callbacks.
//!
//! ```text
//! export_table! {
//!     /// The callbacks the host registers.
//!     pub static mylib_callbacks: MylibCallbacks {
//!         compare,
//!         sqlite::on_row,
//!     }
//! }
//! ```
//!
//! Each entry names a `#[c_callback(local)]` fn, whose expansion declares
//! its function-pointer type under the same name in the type namespace:
//! that is the field's type, and naming anything else is a type error at
//! the entry. The runtime's `export_table!` forwards here with its
//! `$crate` first.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, Ident, Path, Token, Visibility, braced};

use crate::callback::decl;
use crate::fail;
use crate::format;
use crate::record::Record;

struct Table {
    /// The runtime's path (`$crate` of the runtime's `export_table!`).
    krate: Ident,
    attrs: Vec<Attribute>,
    vis: Visibility,
    name: Ident,
    ty: Ident,
    entries: Punctuated<Path, Token![,]>,
}

impl Parse for Table {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let krate = Ident::parse_any(input)?;
        input.parse::<Token![;]>()?;
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        input.parse::<Token![static]>().map_err(|error| {
            syn::Error::new(
                error.span(),
                "callgate::export_table! declares one table: \
                 `export_table! { pub static mylib_callbacks: MylibCallbacks { compare, on_row } }`",
            )
        })?;
        let name = input.parse()?;
        input.parse::<Token![:]>()?;
        let ty = input.parse()?;
        let content;
        braced!(content in input);
        let entries = content.parse_terminated(Path::parse_mod_style, Token![,])?;
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
        }
        if !input.is_empty() {
            return Err(input.error("callgate::export_table! declares one table"));
        }
        Ok(Table {
            krate,
            attrs,
            vis,
            name,
            ty,
            entries,
        })
    }
}

pub(crate) fn export_table(input: TokenStream) -> TokenStream {
    let table: Table = match syn::parse2(input) {
        Ok(table) => table,
        Err(error) => return error.to_compile_error(),
    };
    match check(&table) {
        Ok(fields) => expand(&table, &fields),
        Err(error) => error.to_compile_error(),
    }
}

/// The field name of each entry (its last segment); every problem at once.
fn check(table: &Table) -> syn::Result<Vec<Ident>> {
    let mut errors = Vec::new();
    let mut fields: Vec<Ident> = Vec::new();
    if table.entries.is_empty() {
        errors.push(syn::Error::new_spanned(
            &table.ty,
            "a callgate::export_table! table lists at least one `local` callback",
        ));
    }
    for entry in &table.entries {
        let Some(last) = entry.segments.last() else {
            continue;
        };
        let field = last.ident.clone();
        if fields.iter().any(|known| known.unraw() == field.unraw()) {
            errors.push(syn::Error::new_spanned(
                entry,
                format!(
                    "the table already has a field `{}`: each field is named after its \
                     callback, so two callbacks of one name cannot share a table",
                    field.unraw()
                ),
            ));
        }
        fields.push(field);
    }
    match fail::combine(errors) {
        Some(error) => Err(error),
        None => Ok(fields),
    }
}

fn expand(table: &Table, fields: &[Ident]) -> TokenStream {
    let Table {
        krate,
        attrs,
        vis,
        name,
        ty,
        entries,
    } = table;
    let rt = quote!(#krate::__private);
    let symbol = name.unraw().to_string();
    let mut signature = ty.unraw().to_string();
    for field in fields {
        signature.push(format::TYPE_SEPARATOR);
        signature.push_str(&field.unraw().to_string());
    }
    let record = Record {
        kind: format::TABLE,
        name: symbol.clone(),
        signature,
        types: String::new(),
        docs: decl::docs(attrs),
        free: String::new(),
        holes: Vec::new(),
    };
    let note = record.note_static(&rt);
    let cfgs: Vec<&Attribute> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident("cfg"))
        .collect();
    let entries: Vec<&Path> = entries.iter().collect();
    let struct_doc = format!(
        "The table of `local` callbacks exported as `{symbol}`: one function pointer per \
         callback, in the order listed."
    );
    let field_docs = fields
        .iter()
        .map(|field| format!("The `local` callback `{}`.", field.unraw()));
    quote! {
        #[doc = #struct_doc]
        #(#cfgs)*
        #[repr(C)]
        #[derive(Clone, Copy, Debug)]
        // The fields are the callbacks' C names, which share the
        // library's prefix by design (`mylib_compare`, `mylib_on_row`).
        #[allow(clippy::struct_field_names)]
        #vis struct #ty {
            #(
                #[doc = #field_docs]
                pub #fields: #entries,
            )*
        }

        #(#attrs)*
        #[unsafe(no_mangle)]
        #[allow(non_upper_case_globals)]
        #vis static #name: #ty = #ty {
            #(#fields: #entries,)*
        };

        #(#cfgs)*
        const _: () = {
            // The C declaration, for `callgate-header`.
            #note
        };
    }
}
