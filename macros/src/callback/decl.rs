//! The C declaration of a `#[c_callback]` (or of a fn `export_error_api!`
//! exports), derived from its Rust signature for the declaration record
//! (`crate::record`) that `callgate-header` reads back.
//!
//! The C text is derived from the Rust signature syntactically, parameter by
//! parameter as the trampoline's C signature is (`expand::signature`):
//! `i32` → `int32_t`, `&mut f64` → `double *`, `&str` → `const char *`,
//! `Option<extern "C" fn(i32)>` → `void (*f)(int32_t)`. A type it does not
//! know is a type defined in Rust (`#[repr(C)]` struct, opaque handle, alias)
//! and keeps its Rust name; the record lists those names so the header can
//! forward-declare them. Types from the `libc` crate keep their C names and
//! are left to the system headers.
//!
//! This file builds the records; the C type of a Rust type is
//! `rust_type`'s, and writing a C type as C is `declarator`'s.

mod declarator;
mod rust_type;

use syn::ext::IdentExt;
use syn::{Attribute, Expr, ExprLit, FnArg, Lit, Meta, Pat, ReturnType, Signature};

use super::ast::{Binding, Callback, Kind, Len, Owned, RESULT_LEN, is_pointer_array};
use super::attr::Options;
use crate::format::{self, NAME_SLOT};
use crate::record::Record;
use declarator::const_char_pointer;
pub(crate) use declarator::{CType, parameter_names};
pub(crate) use rust_type::{TypeUses, c_type, scalar};
use rust_type::{is_c_string, owned_c_type};

/// The record of a callback.
pub(crate) fn record(callback: &Callback, options: &Options) -> Record {
    let (kind, name) = match (&options.export, options.local) {
        (_, true) => (format::LOCAL, callback.item.sig.ident.unraw().to_string()),
        (Some(symbol), false) => (format::EXPORT, symbol.value()),
        (None, false) => (format::EXPORT, callback.item.sig.ident.unraw().to_string()),
    };
    let mut types = TypeUses::default();
    let signature = signature(callback, &mut types);
    let mut docs = docs(&callback.item.attrs);
    let mut free_name = String::new();
    if let (Some(owned), Some(free)) = (callback.owned, &options.free) {
        if !docs.is_empty() {
            docs.push_str("\n\n");
        }
        let free = free.segments.last().map(|s| s.ident.unraw().to_string());
        let free = free.unwrap_or_default();
        free_name.clone_from(&free);
        docs.push_str(&match owned {
            Owned::Value(_) => format!("Free the result with `{free}`."),
            Owned::Slice { .. } => format!(
                "Its length is stored in `*{RESULT_LEN}`; free it with\n\
                 `{free}(result, length)`."
            ),
        });
    }
    Record {
        kind,
        name,
        signature,
        types: types.to_field(),
        docs,
        free: free_name,
        holes: Vec::new(),
    }
}

/// The record of a plain `extern "C"` fn exported as `name`: its C
/// signature is its Rust signature, parameter for parameter.
pub(crate) fn export_record(name: String, sig: &Signature, attrs: &[Attribute]) -> Record {
    let mut types = TypeUses::default();
    let params = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            FnArg::Typed(param) => Some(param),
            FnArg::Receiver(_) => None,
        })
        .map(|param| {
            let name = match &*param.pat {
                Pat::Ident(pat) => Some(pat.ident.unraw().to_string()),
                _ => None,
            };
            (name, c_type(&param.ty, &mut types, false))
        })
        .collect();
    let ret = match &sig.output {
        ReturnType::Default => CType::named("void"),
        ReturnType::Type(_, ty) => c_type(ty, &mut types, false),
    };
    let function = CType::Function {
        ret: Box::new(ret),
        params,
        variadic: false,
    };
    Record {
        kind: format::EXPORT,
        name,
        signature: function.declare(NAME_SLOT),
        types: types.to_field(),
        docs: docs(attrs),
        free: String::new(),
        holes: Vec::new(),
    }
}

/// The record of the free function `callgate::export_free!` declares under
/// `name` for owned results of type `owned`.
pub(crate) fn free_record(name: String, owned: Owned, attrs: &[Attribute]) -> Record {
    let mut types = TypeUses::default();
    let pointer = owned_c_type(owned, &mut types);
    let params = match owned {
        Owned::Value(_) => vec![(Some("value".to_owned()), pointer)],
        Owned::Slice { .. } => vec![
            (Some("ptr".to_owned()), pointer),
            (Some("len".to_owned()), CType::named("size_t")),
        ],
    };
    let signature = CType::Function {
        ret: Box::new(CType::named("void")),
        params,
        variadic: false,
    }
    .declare(NAME_SLOT);
    let mut docs = docs(attrs);
    if !docs.is_empty() {
        docs.push_str("\n\n");
    }
    let (summary, obligation) = free_docs(owned);
    docs.push_str(&format!("{summary}\n{obligation}"));
    Record {
        kind: format::EXPORT,
        name,
        signature,
        types: types.to_field(),
        docs,
        free: String::new(),
        holes: Vec::new(),
    }
}

/// The fixed part of the docs of the free function for `owned`, for the
/// header and rustdoc: what it frees (in C's words), and the caller's
/// obligation.
pub(crate) fn free_docs(owned: Owned) -> (String, String) {
    let mut types = TypeUses::default();
    let pointee = |pointer: CType| match pointer {
        CType::Pointer { to, .. } => to.declare(""),
        other => other.declare(""),
    };
    match owned {
        Owned::Value(ty) if is_c_string(ty) => (
            "Frees a string this library returned; NULL is a no-op.".to_owned(),
            "`value` is NULL or came from this library and was not freed before.".to_owned(),
        ),
        Owned::Value(_) => (
            format!(
                "Frees a `{}` this library returned; NULL is a no-op.",
                pointee(owned_c_type(owned, &mut types))
            ),
            "`value` is NULL or came from this library and was not freed before.".to_owned(),
        ),
        Owned::Slice { .. } => (
            format!(
                "Frees an array of `{}` this library returned; NULL is a no-op.",
                pointee(owned_c_type(owned, &mut types))
            ),
            "`ptr` is NULL or came from this library and was not freed before; `len` is the \
             length it came with."
                .to_owned(),
        ),
    }
}

/// The C declaration with [`NAME_SLOT`] for its name, e.g.
/// `int32_t @(const char *text, double *out)`.
fn signature(callback: &Callback, types: &mut TypeUses) -> String {
    let mut params = Vec::new();
    for param in callback.params.iter().filter(|param| param.is_c_param()) {
        let ty = match param.kind {
            Kind::Local { .. } => continue,
            Kind::Value => c_type(param.ty, types, false),
            Kind::Slice {
                mutable: false,
                elem,
                ..
            } if is_pointer_array(elem) => CType::pointer(c_type(elem, types, true)),
            Kind::Ref {
                mutable,
                void: true,
                ..
            } => CType::pointer(CType::named("void").qualified(!mutable)),
            Kind::Ref { mutable, elem, .. } | Kind::Slice { mutable, elem, .. } => {
                CType::pointer(c_type(elem, types, true).qualified(!mutable))
            }
            Kind::OutBuf { elem, .. } => CType::pointer(c_type(elem, types, true)),
            Kind::CStr { .. } | Kind::Str { .. } | Kind::StrLen { .. } => const_char_pointer(),
            Kind::UserData { .. } => CType::pointer(CType::named("void")),
        };
        let name = match param.binding {
            Binding::Ident(ident) => Some(ident.unraw().to_string()),
            Binding::Wild | Binding::Pattern(_) => None,
        };
        let len = name.as_ref().map(|name| format!("{name}_len"));
        params.push((name, ty));
        if let Some(Len::Next) = param.kind.len() {
            params.push((len, CType::named("size_t")));
        }
    }
    let ret = match (callback.owned, callback.output.c_type()) {
        (Some(owned), _) => owned_c_type(owned, types),
        (None, Some(ty)) => c_type(ty, types, false),
        (None, None) => CType::named("void"),
    };
    if let Some(Owned::Slice { .. }) = callback.owned {
        let size_t = CType::pointer(CType::named("size_t"));
        params.push((Some(RESULT_LEN.to_owned()), size_t));
    }
    let function = CType::Function {
        ret: Box::new(ret),
        params,
        variadic: false,
    };
    function.declare(NAME_SLOT)
}

/// The `///` lines, as written (one leading space removed).
pub(crate) fn docs(attrs: &[Attribute]) -> String {
    let mut lines = Vec::new();
    for attr in attrs {
        let Meta::NameValue(meta) = &attr.meta else {
            continue;
        };
        if !meta.path.is_ident("doc") {
            continue;
        }
        // `#[doc = include_str!(..)]` and other non-literal docs are skipped:
        // the macro cannot evaluate them.
        if let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &meta.value
        {
            let text = text.value();
            lines.extend(text.split('\n').map(|line| {
                let line = line.strip_prefix(' ').unwrap_or(line);
                line.trim_end().to_owned()
            }));
        }
    }
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines.join("\n")
}
