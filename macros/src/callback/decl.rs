//! The C declaration of a `#[c_callback]` (or of a fn `export_error_api!`
//! exports), derived from its Rust signature for the declaration record
//! (`crate::record`) that `callgate-header` reads back.
//!
//! The C text is derived from the Rust signature syntactically, parameter by
//! parameter as the trampoline's C signature is (`expand::c_type`):
//! `i32` → `int32_t`, `&mut f64` → `double *`, `&str` → `const char *`,
//! `Option<extern "C" fn(i32)>` → `void (*f)(int32_t)`. A type it does not
//! know is a type defined in Rust (`#[repr(C)]` struct, opaque handle, alias)
//! and keeps its Rust name; the record lists those names so the header can
//! forward-declare them. Types from the `libc` crate keep their C names and
//! are left to the system headers.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{
    Attribute, Expr, ExprLit, FnArg, Lit, Meta, Pat, ReturnType, Signature, Type, TypeBareFn,
    TypePath,
};

use super::ast::{
    Binding, Callback, Kind, Len, Owned, RESULT_LEN, generic_arg, is_plain, is_pointer_array, peel,
};
use super::attr::Options;
use crate::format::{self, NAME_SLOT};
use crate::record::Record;

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

/// The Rust-defined types a signature names, and whether C only ever sees
/// them behind a pointer.
#[derive(Default)]
pub(crate) struct TypeUses {
    /// `(name, by_value)`, in order of first use.
    uses: Vec<(String, bool)>,
    /// Where array lengths the macro cannot read (`[u8; NAME_LEN]`) go:
    /// `Some` for a record the compiler finishes (see `record::HOLE`),
    /// `None` to write them as they are spelled.
    pub holes: Option<Vec<TokenStream>>,
    /// Count a type a function pointer's signature names as behind a
    /// pointer: a field of that function-pointer type needs only its
    /// declaration, which a cycle of types may then run through.
    through_functions: bool,
}

impl TypeUses {
    /// The uses of a type's fields: array lengths the macro cannot read
    /// are left to the compiler, as holes.
    pub fn of_fields() -> TypeUses {
        TypeUses {
            uses: Vec::new(),
            holes: Some(Vec::new()),
            through_functions: true,
        }
    }

    fn add(&mut self, name: &str, behind_pointer: bool) {
        match self.uses.iter_mut().find(|(known, _)| known == name) {
            Some((_, by_value)) => *by_value |= !behind_pointer,
            None => self.uses.push((name.to_owned(), !behind_pointer)),
        }
    }

    /// `Point *Session`: the names sorted, `*` marking a type only used
    /// behind pointers.
    pub fn to_field(&self) -> String {
        let mut uses: Vec<&(String, bool)> = self.uses.iter().collect();
        uses.sort_by(|(a, _), (b, _)| a.cmp(b));
        let names: Vec<String> = uses
            .iter()
            .map(|(name, by_value)| {
                if *by_value {
                    name.clone()
                } else {
                    format!("{}{name}", format::BEHIND_POINTER)
                }
            })
            .collect();
        names.join(&format::TYPE_SEPARATOR.to_string())
    }
}

/// A C type, enough to write declarators: `const char *`, `int32_t (*)[4]`,
/// `void (*)(int32_t)`. Parameter names are the Rust ones; [`CType::declare`]
/// writes them as C accepts them (see [`parameter_names`]).
pub(crate) enum CType {
    Named {
        name: String,
        constant: bool,
    },
    Pointer {
        to: Box<CType>,
        /// The pointer itself is `const` (`*const *mut T` → `T *const *`).
        constant: bool,
    },
    Array {
        of: Box<CType>,
        len: String,
    },
    Function {
        ret: Box<CType>,
        params: Vec<(Option<String>, CType)>,
        variadic: bool,
    },
}

impl CType {
    fn named(name: &str) -> CType {
        CType::Named {
            name: name.to_owned(),
            constant: false,
        }
    }

    fn pointer(to: CType) -> CType {
        CType::Pointer {
            to: Box::new(to),
            constant: false,
        }
    }

    /// `const`-qualified when `yes`. A `const` array is an array of `const`
    /// elements in C; a function cannot be qualified.
    fn qualified(self, yes: bool) -> CType {
        if !yes {
            return self;
        }
        match self {
            CType::Named { name, .. } => CType::Named {
                name,
                constant: true,
            },
            CType::Pointer { to, .. } => CType::Pointer { to, constant: true },
            CType::Array { of, len } => CType::Array {
                of: Box::new(of.qualified(true)),
                len,
            },
            function @ CType::Function { .. } => function,
        }
    }

    /// The C declaration of `declarator` (a name, or empty for a type name)
    /// with this type: C's inside-out declarator syntax.
    pub fn declare(&self, declarator: &str) -> String {
        match self {
            CType::Named { name, constant } => {
                let constant = if *constant { "const " } else { "" };
                if declarator.is_empty() {
                    format!("{constant}{name}")
                } else {
                    format!("{constant}{name} {declarator}")
                }
            }
            CType::Pointer { to, constant } => {
                let mut inner = String::from("*");
                if *constant {
                    inner.push_str("const");
                    if !declarator.is_empty() {
                        inner.push(' ');
                    }
                }
                inner.push_str(declarator);
                if matches!(**to, CType::Array { .. } | CType::Function { .. }) {
                    inner = format!("({inner})");
                }
                to.declare(&inner)
            }
            CType::Array { of, len } => of.declare(&format!("{declarator}[{len}]")),
            CType::Function {
                ret,
                params,
                variadic,
            } => {
                let names = parameter_names(params);
                let mut list: Vec<String> = params
                    .iter()
                    .zip(&names)
                    .map(|((_, ty), name)| ty.declare(name.as_deref().unwrap_or("")))
                    .collect();
                if *variadic {
                    list.push("...".to_owned());
                }
                let list = if list.is_empty() {
                    "void".to_owned()
                } else {
                    list.join(", ")
                };
                ret.declare(&format!("{declarator}({list})"))
            }
        }
    }

    /// The words of the type names it is written with (`size_t`,
    /// `Session`, `unsigned`), in function pointers' parameters too.
    fn type_names<'a>(&'a self, names: &mut Vec<&'a str>) {
        match self {
            CType::Named { name, .. } => names.extend(name.split_whitespace()),
            CType::Pointer { to, .. } => to.type_names(names),
            CType::Array { of, .. } => of.type_names(names),
            CType::Function { ret, params, .. } => {
                ret.type_names(names);
                for (_, ty) in params {
                    ty.type_names(names);
                }
            }
        }
    }
}

/// The C names of a parameter list's Rust names: each [`c_identifier`],
/// then given more `_` while it is a type the list names (a parameter
/// `size_t` hides the type from the parameters after it) or the name of
/// an earlier parameter (`class_` after `class`).
pub(crate) fn parameter_names(params: &[(Option<String>, CType)]) -> Vec<Option<String>> {
    let mut types = Vec::new();
    for (_, ty) in params {
        ty.type_names(&mut types);
    }
    let mut given: Vec<String> = Vec::new();
    params
        .iter()
        .map(|(name, _)| {
            let mut name = c_identifier(name.as_deref()?);
            while types.contains(&name.as_str()) || given.contains(&name) {
                name.push('_');
            }
            given.push(name.clone());
            Some(name)
        })
        .collect()
}

fn const_char_pointer() -> CType {
    CType::pointer(CType::named("char").qualified(true))
}

/// The pointer C receives for an owned result: `char *` for a `CString`,
/// `T *` for a `Box<T>` or an array of `T`s.
fn owned_c_type(owned: Owned, types: &mut TypeUses) -> CType {
    match owned {
        Owned::Value(ty) if is_c_string(ty) => CType::pointer(CType::named("char")),
        Owned::Value(ty) => c_type(ty, types, false),
        Owned::Slice { elem, .. } => CType::pointer(c_type(elem, types, true)),
    }
}

/// `CString` or `Option<CString>`.
fn is_c_string(ty: &Type) -> bool {
    let inner = generic_arg(ty, "Option").unwrap_or(ty);
    matches!(peel(inner), Type::Path(path) if is_plain(path, "CString"))
}

/// The C type of `ty`; `behind_pointer` when C reaches it through a pointer
/// (it may then stay opaque).
pub(crate) fn c_type(ty: &Type, types: &mut TypeUses, behind_pointer: bool) -> CType {
    match peel(ty) {
        Type::Tuple(tuple) if tuple.elems.is_empty() => CType::named("void"),
        Type::Never(_) => CType::named("void"),
        Type::Ptr(pointer) => {
            let to = c_type(&pointer.elem, types, true).qualified(pointer.const_token.is_some());
            CType::pointer(to)
        }
        Type::Reference(reference) => match peel(&reference.elem) {
            Type::Path(path) if is_plain(path, "CStr") || is_plain(path, "str") => {
                const_char_pointer()
            }
            elem => {
                let to = c_type(elem, types, true).qualified(reference.mutability.is_none());
                CType::pointer(to)
            }
        },
        Type::Array(array) => CType::Array {
            of: Box::new(c_type(&array.elem, types, behind_pointer)),
            len: match (&array.len, &mut types.holes) {
                (
                    Expr::Lit(ExprLit {
                        lit: Lit::Int(int), ..
                    }),
                    _,
                ) => int.base10_digits().to_owned(),
                (other, Some(holes)) => {
                    holes.push(quote!(#other));
                    crate::record::hole(holes.len() - 1)
                }
                (other, None) => other.to_token_stream().to_string(),
            },
        },
        Type::BareFn(function) => CType::pointer(bare_fn(function, types)),
        Type::Path(path) => path_type(path, ty, types, behind_pointer),
        // Everything else is rejected by `valid` or rustc; keep the Rust
        // spelling so a C compiler names it.
        other => CType::named(&other.to_token_stream().to_string()),
    }
}

fn bare_fn(function: &TypeBareFn, types: &mut TypeUses) -> CType {
    let behind_pointer = types.through_functions;
    let ret = match &function.output {
        ReturnType::Default => CType::named("void"),
        ReturnType::Type(_, ty) => c_type(ty, types, behind_pointer),
    };
    let params = function
        .inputs
        .iter()
        .map(|arg| {
            let name = arg
                .name
                .as_ref()
                .map(|(ident, _)| ident.unraw().to_string())
                .filter(|name| name != "_");
            (name, c_type(&arg.ty, types, behind_pointer))
        })
        .collect();
    CType::Function {
        ret: Box::new(ret),
        params,
        variadic: function.variadic.is_some(),
    }
}

fn path_type(path: &TypePath, ty: &Type, types: &mut TypeUses, behind_pointer: bool) -> CType {
    let Some(last) = path.path.segments.last() else {
        return CType::named(&ty.to_token_stream().to_string());
    };
    let ident = last.ident.to_string();
    // Same layout as their argument (niche-optimised or transparent).
    if let "Option" | "NonZero" | "MaybeUninit" | "ManuallyDrop" = ident.as_str() {
        if let Some(inner) = generic_arg(ty, &ident) {
            return c_type(inner, types, behind_pointer);
        }
    }
    if let "Box" | "NonNull" = ident.as_str() {
        if let Some(inner) = generic_arg(ty, &ident) {
            return CType::pointer(c_type(inner, types, true));
        }
    }
    if last.arguments.is_none() {
        if let Some(name) = scalar(&ident) {
            return CType::named(name);
        }
    }
    let from_libc = path.qself.is_none()
        && path.path.segments.len() > 1
        && path
            .path
            .segments
            .first()
            .is_some_and(|s| s.ident == "libc");
    if !from_libc {
        types.add(&ident, behind_pointer);
    }
    CType::named(&ident)
}

/// The C spelling of a Rust scalar or C-named type.
pub(crate) fn scalar(ident: &str) -> Option<&'static str> {
    Some(match ident {
        "i8" | "int8_t" => "int8_t",
        "i16" | "int16_t" => "int16_t",
        "i32" | "int32_t" => "int32_t",
        "i64" | "int64_t" => "int64_t",
        "u8" | "uint8_t" => "uint8_t",
        "u16" | "uint16_t" => "uint16_t",
        "u32" | "uint32_t" => "uint32_t",
        "u64" | "uint64_t" => "uint64_t",
        "i128" => "__int128",
        "u128" => "unsigned __int128",
        "NonZeroI8" => "int8_t",
        "NonZeroI16" => "int16_t",
        "NonZeroI32" => "int32_t",
        "NonZeroI64" => "int64_t",
        "NonZeroU8" => "uint8_t",
        "NonZeroU16" => "uint16_t",
        "NonZeroU32" => "uint32_t",
        "NonZeroU64" => "uint64_t",
        // Rust guarantees `usize` has the size of a pointer; every target
        // callgate supports has `size_t` and `ptrdiff_t` of that size too.
        "usize" | "size_t" | "c_size_t" | "NonZeroUsize" => "size_t",
        "isize" | "ssize_t" | "c_ssize_t" | "ptrdiff_t" | "c_ptrdiff_t" | "NonZeroIsize" => {
            "ptrdiff_t"
        }
        "intptr_t" => "intptr_t",
        "uintptr_t" => "uintptr_t",
        "f32" | "c_float" => "float",
        "f64" | "c_double" => "double",
        "bool" => "bool",
        "c_void" => "void",
        "c_char" => "char",
        "c_schar" => "signed char",
        "c_uchar" => "unsigned char",
        "c_short" => "short",
        "c_ushort" => "unsigned short",
        "c_int" => "int",
        "c_uint" => "unsigned int",
        "c_long" => "long",
        "c_ulong" => "unsigned long",
        "c_longlong" => "long long",
        "c_ulonglong" => "unsigned long long",
        _ => return None,
    })
}

/// `name` as a C parameter name: with a trailing `_` if C or C++ code
/// cannot use it ([`format::is_reserved`]: `class`, `_Bool`, `NULL`).
pub(crate) fn c_identifier(name: &str) -> String {
    if format::is_reserved(name) {
        format!("{name}_")
    } else {
        name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declare(rust: &str) -> (String, String) {
        let ty: Type = syn::parse_str(rust).expect("a type");
        let mut types = TypeUses::default();
        let c = c_type(&ty, &mut types, false).declare("x");
        (c, types.to_field())
    }

    #[test]
    fn scalars_and_pointers() {
        assert_eq!(declare("i32").0, "int32_t x");
        assert_eq!(declare("usize").0, "size_t x");
        assert_eq!(declare("isize").0, "ptrdiff_t x");
        assert_eq!(declare("std::os::raw::c_ulong").0, "unsigned long x");
        assert_eq!(declare("*const c_void").0, "const void *x");
        assert_eq!(declare("*mut *const u8").0, "const uint8_t **x");
        assert_eq!(declare("*const *mut u8").0, "uint8_t *const *x");
        assert_eq!(declare("&mut f64").0, "double *x");
        assert_eq!(declare("Option<&CStr>").0, "const char *x");
        assert_eq!(declare("&'static str").0, "const char *x");
        assert_eq!(declare("&[u8; 4]").0, "const uint8_t (*x)[4]");
        assert_eq!(declare("Option<NonZeroU32>").0, "uint32_t x");
        assert_eq!(declare("()").0, "void x");
    }

    #[test]
    fn function_pointers() {
        assert_eq!(
            declare("Option<extern \"C\" fn(i32) -> i32>").0,
            "int32_t (*x)(int32_t)"
        );
        assert_eq!(
            declare("Option<unsafe extern \"C\" fn(data: *mut c_void, class: usize)>").0,
            "void (*x)(void *data, size_t class_)"
        );
        assert_eq!(
            declare("extern \"C\" fn() -> extern \"C\" fn(f64) -> f64").0,
            "double (*(*x)(void))(double)"
        );
        assert_eq!(
            declare("*const extern \"C\" fn(i32, ...)").0,
            "void (*const *x)(int32_t, ...)"
        );
    }

    #[test]
    fn reserved_parameter_names_get_a_trailing_underscore() {
        assert_eq!(
            declare("Option<extern \"C\" fn(_Bool: i32, compl: i32, consteval: i32, import: i32)>")
                .0,
            "void (*x)(int32_t _Bool_, int32_t compl_, int32_t consteval_, int32_t import)"
        );
        assert_eq!(
            declare("Option<extern \"C\" fn(NULL: i32, INT8_MAX: i32, _Float128: f64, __x: u8)>").0,
            "void (*x)(int32_t NULL_, int32_t INT8_MAX_, double _Float128_, uint8_t __x_)"
        );
        // A type of the list, and a name an earlier escape took.
        assert_eq!(
            declare("Option<extern \"C\" fn(size_t: usize, class: i32, class_: i32)>").0,
            "void (*x)(size_t size_t_, int32_t class_, int32_t class__)"
        );
        assert_eq!(
            declare("Option<extern \"C\" fn(Session: *mut Session, f: extern \"C\" fn(Point))>").0,
            "void (*x)(Session *Session_, void (*f)(Point))"
        );
    }

    #[test]
    fn rust_types_are_named_and_listed() {
        assert_eq!(
            declare("Option<Box<Session>>"),
            ("Session *x".to_owned(), "*Session".to_owned())
        );
        assert_eq!(
            declare("&crate::geometry::Point"),
            ("const Point *x".to_owned(), "*Point".to_owned())
        );
        assert_eq!(
            declare("Option<extern \"C\" fn(Point, *mut Session)>"),
            (
                "void (*x)(Point, Session *)".to_owned(),
                "Point *Session".to_owned()
            )
        );
        assert_eq!(
            declare("libc::pid_t"),
            ("pid_t x".to_owned(), String::new())
        );
    }
}
