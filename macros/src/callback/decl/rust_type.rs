//! The C type of a Rust type (`c_type`), the C names of Rust's scalars, and
//! `TypeUses`: the Rust-defined types a signature names, which the header
//! declares.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::ext::IdentExt;
use syn::{Expr, ExprLit, Lit, ReturnType, Type, TypeBareFn, TypePath};

use super::declarator::{CType, const_char_pointer};
use crate::callback::ast::{Owned, generic_arg, is_plain, peel};
use crate::format;

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

/// The pointer C receives for an owned result: `char *` for a `CString`,
/// `T *` for a `Box<T>` or an array of `T`s.
pub(super) fn owned_c_type(owned: Owned, types: &mut TypeUses) -> CType {
    match owned {
        Owned::Value(ty) if is_c_string(ty) => CType::pointer(CType::named("char")),
        Owned::Value(ty) => c_type(ty, types, false),
        Owned::Slice { elem, .. } => CType::pointer(c_type(elem, types, true)),
    }
}

/// `CString` or `Option<CString>`.
pub(super) fn is_c_string(ty: &Type) -> bool {
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
