//! The declaration records of the derives: what `callgate-header` needs to
//! define a `#[derive(CEnum)]` enum (its integer type and the value of
//! each variant, under a C name) and a `#[derive(CValue)]` struct (each
//! field's C declaration, in order), recorded in the library as a
//! callback's declaration is. The values of discriminants and of array
//! lengths the macro cannot read are left to the compiler (`record::HOLE`).
//!
//! `#[callgate(...)]` options: on the type, `skip_header` (no record: the
//! prelude defines it) and, for an enum, `prefix = "MODE_"` (the start of
//! each constant's name, by default the type's name in upper snake case
//! and `_`); on a variant, `rename = "NAME"` (the constant's whole name).

use proc_macro2::TokenStream;
use quote::quote;
use syn::ext::IdentExt;
use syn::{Attribute, DataEnum, DataStruct, DeriveInput, Ident, LitStr, Type};

use crate::callback::ast::peel;
use crate::callback::decl::{self, CType, TypeUses, c_type, parameter_names, scalar};
use crate::fail;
use crate::format::{self, MEMBER_SEPARATOR, NAME_SLOT};
use crate::record::{HOLE, Record};

/// The `#[callgate(...)]` options of the type.
#[derive(Default)]
struct TypeOptions {
    skip_header: bool,
    prefix: Option<LitStr>,
    /// The prefix is reported already: the names made with it are not.
    prefix_error: bool,
}

/// The record of a `#[derive(CEnum)]` enum whose C type is the integer
/// `integer` (`None`: `#[repr(C)]`, C's `int`), as a `const _` item; empty
/// with `skip_header`.
pub(crate) fn c_enum(
    input: &DeriveInput,
    data: &DataEnum,
    integer: Option<&Ident>,
    rt: &TokenStream,
) -> syn::Result<TokenStream> {
    let mut errors = Vec::new();
    let options = type_options(&input.attrs, true, &mut errors);
    if options.skip_header {
        return match fail::combine(errors) {
            Some(error) => Err(error),
            None => Ok(TokenStream::new()),
        };
    }
    let ident = &input.ident;
    let name = ident.unraw().to_string();
    type_name(ident, &mut errors);
    let prefix = match &options.prefix {
        Some(prefix) => prefix.value(),
        None => format!("{}_", upper_snake(&name)),
    };
    let repr = match integer {
        Some(integer) => scalar(&integer.to_string()).unwrap_or("int"),
        None => "int",
    };
    let mut signature = repr.to_owned();
    let mut docs = text(&decl::docs(&input.attrs));
    let mut holes = Vec::new();
    let mut constants: Vec<String> = Vec::new();
    for variant in &data.variants {
        let rename = variant_rename(&variant.attrs, &mut errors);
        let constant = match &rename {
            Some(rename) => rename.value(),
            None => format!(
                "{prefix}{}",
                upper_snake(&variant.ident.unraw().to_string())
            ),
        };
        let blame: &dyn quote::ToTokens = match &rename {
            Some(rename) => rename,
            None => &variant.ident,
        };
        let reported = rename.is_none() && options.prefix_error;
        if let Some(problem) = c_name_problem(&constant).filter(|_| !reported) {
            errors.push(syn::Error::new_spanned(
                blame,
                format!(
                    "#[derive(CEnum)] names this variant `{constant}` in C, which {problem}; \
                     name it with `#[callgate(rename = \"NAME\")]`{}",
                    if rename.is_none() {
                        " or choose the enum's `#[callgate(prefix = \"...\")]`"
                    } else {
                        ""
                    }
                ),
            ));
        } else if constants.contains(&constant) {
            errors.push(syn::Error::new_spanned(
                blame,
                format!(
                    "#[derive(CEnum)] names two variants `{constant}` in C; name one with \
                     `#[callgate(rename = \"NAME\")]`"
                ),
            ));
        }
        let variant_ident = &variant.ident;
        holes.push(quote!(#ident::#variant_ident));
        signature.push(MEMBER_SEPARATOR);
        signature.push_str(&format!(
            "{constant}={}",
            crate::record::hole(holes.len() - 1)
        ));
        docs.push(MEMBER_SEPARATOR);
        docs.push_str(&text(&decl::docs(&variant.attrs)));
        constants.push(constant);
    }
    if let Some(error) = fail::combine(errors) {
        return Err(error);
    }
    let record = Record {
        kind: format::ENUM,
        name,
        signature,
        types: String::new(),
        docs: docs.trim_end_matches(MEMBER_SEPARATOR).to_owned(),
        free: String::new(),
        holes,
    };
    Ok(note(&record, rt))
}

/// The record of a `#[derive(CValue)]` struct with C's layout, whose
/// `#[repr(…)]`s are `reprs` (`C`, or `transparent`), as a `const _` item;
/// empty with `skip_header`.
pub(crate) fn c_value(
    input: &DeriveInput,
    data: &DataStruct,
    reprs: &[Ident],
    rt: &TokenStream,
) -> syn::Result<TokenStream> {
    let transparent = !reprs.iter().any(|repr| repr == "C");
    let mut errors = Vec::new();
    let options = type_options(&input.attrs, false, &mut errors);
    for field in &data.fields {
        for attr in field
            .attrs
            .iter()
            .filter(|attr| attr.path().is_ident("callgate"))
        {
            errors.push(syn::Error::new_spanned(
                attr,
                "#[callgate(...)] goes on the type (`skip_header`), not on a field",
            ));
        }
    }
    if options.skip_header {
        return match fail::combine(errors) {
            Some(error) => Err(error),
            None => Ok(TokenStream::new()),
        };
    }
    let ident = &input.ident;
    let name = ident.unraw().to_string();
    type_name(ident, &mut errors);
    let define_it = "or add `#[callgate(skip_header)]` and define the type in the header's \
                     prelude";
    if !input.generics.params.is_empty() {
        errors.push(syn::Error::new_spanned(
            &input.generics,
            format!(
                "#[derive(CValue)] describes the struct to C, which has no generics: derive it \
                 on a struct of concrete types, {define_it}"
            ),
        ));
    }
    for repr in reprs {
        if repr == "packed" || repr == "align" {
            errors.push(syn::Error::new_spanned(
                repr,
                format!(
                    "#[derive(CValue)] describes the struct to C, which cannot say `{repr}` \
                     portably: remove it, {define_it}"
                ),
            ));
        }
    }
    let fields: Vec<(String, &Type, &[Attribute])> = data
        .fields
        .iter()
        .enumerate()
        .filter(|(_, field)| !is_phantom(&field.ty))
        .map(|(index, field)| {
            let name = match &field.ident {
                Some(ident) => ident.unraw().to_string(),
                None => format!("_{index}"),
            };
            (name, &field.ty, &field.attrs[..])
        })
        .collect();
    let struct_token = data.struct_token;
    if fields.is_empty() {
        errors.push(syn::Error::new_spanned(
            struct_token,
            format!(
                "#[derive(CValue)] describes the struct to C, which has no empty structs: give \
                 it a field, {define_it}"
            ),
        ));
    } else if transparent && fields.len() > 1 {
        errors.push(syn::Error::new_spanned(
            struct_token,
            format!(
                "#[derive(CValue)] defines a `#[repr(transparent)]` struct in C as its one \
                 field's type, and this one has {} fields that are not `PhantomData`: use \
                 `#[repr(C)]`, {define_it}",
                fields.len()
            ),
        ));
    }
    if let Some(error) = fail::combine(errors) {
        return Err(error);
    }
    let mut uses = TypeUses::of_fields();
    let record = if transparent {
        let (_, ty, _) = fields[0];
        let signature = c_type(ty, &mut uses, false).declare(NAME_SLOT);
        Record {
            kind: format::TYPEDEF,
            name,
            signature,
            types: uses.to_field(),
            docs: text(&decl::docs(&input.attrs)),
            free: String::new(),
            holes: uses.holes.take().unwrap_or_default(),
        }
    } else {
        let declared: Vec<(Option<String>, CType)> = fields
            .iter()
            .map(|(name, ty, _)| (Some(name.clone()), c_type(ty, &mut uses, false)))
            .collect();
        let names = parameter_names(&declared);
        let mut signature = String::new();
        let mut docs = text(&decl::docs(&input.attrs));
        for (((_, ty), name), (_, _, attrs)) in declared.iter().zip(&names).zip(&fields) {
            if !signature.is_empty() {
                signature.push(MEMBER_SEPARATOR);
            }
            signature.push_str(&ty.declare(name.as_deref().unwrap_or_default()));
            docs.push(MEMBER_SEPARATOR);
            docs.push_str(&text(&decl::docs(attrs)));
        }
        Record {
            kind: format::STRUCT,
            name,
            signature,
            types: uses.to_field(),
            docs: docs.trim_end_matches(MEMBER_SEPARATOR).to_owned(),
            free: String::new(),
            holes: uses.holes.take().unwrap_or_default(),
        }
    };
    Ok(note(&record, rt))
}

/// The record's static, in an anonymous `const` of its own.
fn note(record: &Record, rt: &TokenStream) -> TokenStream {
    let note = record.note_static(rt);
    quote! {
        // The C definition, for `callgate-header`.
        const _: () = {
            #note
        };
    }
}

/// Parses the `#[callgate(...)]` attributes of the type. `crate = path`
/// is read where the runtime's path is chosen.
fn type_options(attrs: &[Attribute], is_enum: bool, errors: &mut Vec<syn::Error>) -> TypeOptions {
    let mut options = TypeOptions::default();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("callgate")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("skip_header") {
                options.skip_header = true;
            } else if meta.path.is_ident("prefix") && is_enum {
                options.prefix = Some(meta.value()?.parse()?);
            } else if meta.path.is_ident("crate") {
                meta.value()?.parse::<syn::Path>()?;
            } else {
                let valid = if is_enum {
                    "are `crate = path`, `skip_header` and `prefix = \"...\"`"
                } else {
                    "are `crate = path` and `skip_header`"
                };
                return Err(meta.error(format!("unknown #[callgate] option; valid {valid}")));
            }
            Ok(())
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    if let Some(prefix) = &options.prefix {
        let value = prefix.value();
        let valid = value.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
            && !value.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            errors.push(syn::Error::new_spanned(
                prefix,
                "#[callgate(prefix = \"...\")] starts C identifiers: letters, digits and `_`, \
                 not a digit first",
            ));
            options.prefix_error = true;
        }
    }
    options
}

/// A variant's `#[callgate(rename = "NAME")]`.
fn variant_rename(attrs: &[Attribute], errors: &mut Vec<syn::Error>) -> Option<LitStr> {
    let mut rename = None;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("callgate")) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                rename = Some(meta.value()?.parse()?);
                Ok(())
            } else {
                Err(meta
                    .error("unknown #[callgate] option on a variant; valid is `rename = \"NAME\"`"))
            }
        });
        if let Err(error) = parsed {
            errors.push(error);
        }
    }
    rename
}

/// Reports a type name C or C++ code cannot use (`r#class`).
fn type_name(ident: &Ident, errors: &mut Vec<syn::Error>) {
    let name = ident.unraw().to_string();
    if let Some(problem) = c_name_problem(&name) {
        errors.push(syn::Error::new_spanned(
            ident,
            format!(
                "the header names this type `{name}`, which {problem}: rename it, or add \
                 `#[callgate(skip_header)]` and define it in the header's prelude"
            ),
        ));
    }
}

/// Why C or C++ code cannot name something `name`, if it cannot.
fn c_name_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    let identifier = chars
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
    if !identifier {
        Some("is not a C identifier")
    } else if format::is_reserved(name) {
        Some("C or C++ reserves (a keyword, a macro or a name of the implementation)")
    } else {
        None
    }
}

/// `HttpStatus` → `HTTP_STATUS`, `HTTPServer` → `HTTP_SERVER`,
/// `V2Mode` → `V2_MODE`, `not_found` → `NOT_FOUND`.
fn upper_snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (index, &c) in chars.iter().enumerate() {
        if index > 0 && c.is_ascii_uppercase() {
            let previous = chars[index - 1];
            let next_lower = chars.get(index + 1).is_some_and(char::is_ascii_lowercase);
            if previous.is_ascii_lowercase()
                || previous.is_ascii_digit()
                || (previous.is_ascii_uppercase() && next_lower)
            {
                out.push('_');
            }
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// Doc text without the bytes a record's structure uses.
fn text(docs: &str) -> String {
    docs.chars()
        .filter(|&c| c != MEMBER_SEPARATOR && c != HOLE)
        .collect()
}

/// `PhantomData<T>`: no bytes, so no C field.
fn is_phantom(ty: &Type) -> bool {
    matches!(peel(ty), Type::Path(path)
        if path.qself.is_none()
            && path.path.segments.last().is_some_and(|last| last.ident == "PhantomData"))
}

/// The element of an array field, arrays of arrays peeled: what must be a
/// `CValue` for the array to take every bit pattern.
pub(crate) fn array_element(ty: &Type) -> &Type {
    match peel(ty) {
        Type::Array(array) => array_element(&array.elem),
        _ => ty,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_snake_case() {
        for (name, upper) in [
            ("Mode", "MODE"),
            ("HttpStatus", "HTTP_STATUS"),
            ("HTTPServer", "HTTP_SERVER"),
            ("V2Mode", "V2_MODE"),
            ("not_found", "NOT_FOUND"),
            ("A", "A"),
        ] {
            assert_eq!(upper_snake(name), upper);
        }
    }

    #[test]
    fn reserved_and_odd_names_are_reported() {
        assert!(c_name_problem("MODE_FAST").is_none());
        assert!(c_name_problem("class").is_some());
        assert!(c_name_problem("INT8_MAX").is_some());
        assert!(c_name_problem("9LIVES").is_some());
    }
}
