//! Tailored messages for the types that cannot cross the C boundary and are
//! easy to write by mistake. Anything this misses is still caught: the
//! generated fn denies `improper_ctypes_definitions`, and rustc reports on the
//! user's type span.

use syn::{GenericArgument, PathArguments, ReturnType, Type, TypeBareFn, TypePath};

use super::ast::{generic_arg, is_plain, peel};

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Position {
    Param,
    Return,
}

/// Checks a parameter's type (not a `#[local]` one) or the C return type.
pub(crate) fn check(ty: &Type, position: Position) -> Option<syn::Error> {
    if let Some(impl_trait) = find_impl_trait(ty) {
        let message = match position {
            Position::Param => {
                "#[c_callback] functions cannot take `impl Trait`: C passes one concrete type; \
                 name it (an `extern \"C\" fn` pointer for a callback)"
            }
            Position::Return => {
                "#[c_callback] functions cannot return `impl Trait`: C receives one concrete \
                 type; name it"
            }
        };
        return Some(syn::Error::new_spanned(impl_trait, message));
    }
    value(ty, position, false).map(|message| syn::Error::new_spanned(ty, message))
}

/// A message for a type passed by value; `in_option` when it is the `T` of an
/// `Option<T>`, which C may pass as NULL.
fn value(ty: &Type, position: Position, in_option: bool) -> Option<String> {
    let param = position == Position::Param;
    let message = match peel(ty) {
        Type::Reference(reference) => {
            return pointee(&reference.elem, reference.mutability.is_some(), position);
        }
        Type::TraitObject(_) => DYN.to_owned(),
        Type::Tuple(tuple) if !tuple.elems.is_empty() => {
            "tuples cannot cross the C boundary; use a `#[repr(C)]` struct".to_owned()
        }
        Type::Slice(_) => POINTER_AND_LENGTH.to_owned(),
        Type::Array(_) if param => {
            "C passes arrays as pointers; take `&[T; N]` or `*const T`".to_owned()
        }
        Type::Array(_) => {
            "C functions cannot return arrays; return a `#[repr(C)]` struct that holds one"
                .to_owned()
        }
        Type::BareFn(function) => return bare_fn(function, param && !in_option),
        Type::Path(path) => return path_value(path, ty, position, in_option),
        _ => return None,
    };
    Some(message)
}

fn path_value(path: &TypePath, ty: &Type, position: Position, in_option: bool) -> Option<String> {
    let param = position == Position::Param;
    let last = path.path.segments.last()?;
    let name = last.ident.to_string();
    let message = match name.as_str() {
        "String" | "CString" | "OsString" | "PathBuf" if param => {
            format!("`{name}` cannot cross the C boundary; take `&CStr` or `&str`")
        }
        "String" | "OsString" | "PathBuf" => format!(
            "`{name}` cannot cross the C boundary; return a `CString` and name the function that \
             frees it: `#[c_callback(free = …)]`"
        ),
        "str" | "CStr" | "OsStr" | "Path" if is_plain(path, &name) => {
            format!("`{name}` cannot cross the C boundary by value; take `&CStr` or `&str`")
        }
        "Vec" | "VecDeque" if param => {
            format!("`{name}<T>` cannot cross the C boundary; {POINTER_AND_LENGTH_TAIL}")
        }
        "VecDeque" => "`VecDeque<T>` cannot cross the C boundary; return a `Vec<T>` and name \
                       the function that frees it: `#[c_callback(free = …)]`"
            .to_owned(),
        "Box" if !param && generic_arg(ty, "Box").is_some_and(is_text) => {
            "a boxed string cannot cross the C boundary; return a `CString` and name the \
             function that frees it: `#[c_callback(free = …)]`"
                .to_owned()
        }
        "char" if is_plain(path, "char") && param => {
            "`char` cannot cross the C boundary (C's `char` is a byte); take `u32` and convert \
             with `char::from_u32`, or take `c_char`"
                .to_owned()
        }
        "char" if is_plain(path, "char") => {
            "`char` cannot cross the C boundary (C's `char` is a byte); return `u32` or `c_char`"
                .to_owned()
        }
        "NonZero" | "NonZeroI8" | "NonZeroI16" | "NonZeroI32" | "NonZeroI64" | "NonZeroI128"
        | "NonZeroIsize" | "NonZeroU8" | "NonZeroU16" | "NonZeroU32" | "NonZeroU64"
        | "NonZeroU128" | "NonZeroUsize"
            if param && !in_option =>
        {
            format!(
                "C may pass 0 for an integer, which is undefined behaviour for `{name}`; take \
                 `Option<{name}>` (0 is `None`), or the integer and check it"
            )
        }
        "Box" | "Rc" | "Arc" if generic_arg(ty, &name).is_some_and(is_dyn) => format!(
            "`{name}<dyn Trait>` is a fat pointer and cannot cross the C boundary; box it again \
             (`Box<Box<dyn Trait>>`) and pass the thin pointer, or use a `#[repr(C)]` struct"
        ),
        "Box" | "NonNull" if param && !in_option => {
            format!("C may pass NULL for a pointer; take `Option<{name}<T>>` (or `*mut T`)")
        }
        "Option" => {
            let inner = generic_arg(ty, "Option")?;
            return value(inner, position, true);
        }
        _ => return None,
    };
    Some(message)
}

/// A message for a reference's target; `&T` to a sized `T` is fine.
fn pointee(elem: &Type, mutable: bool, position: Position) -> Option<String> {
    let param = position == Position::Param;
    let message = match peel(elem) {
        Type::Slice(_) if param => {
            "a reference to a slice cannot be nested in another type; take `&[T]` itself".to_owned()
        }
        Type::Slice(_) => {
            let amp = if mutable { "&mut " } else { "&" };
            format!(
                "`{amp}[T]` cannot be returned to C; return a `Vec<T>` or `Box<[T]>` and name \
                 the function that frees it (`free = …`), or fill an `OutBuf<'_, T>` parameter"
            )
        }
        Type::TraitObject(_) => DYN.to_owned(),
        Type::Reference(_) => {
            "a reference to a reference cannot cross the C boundary: only the outer pointer \
             could be checked for NULL; take `&*const T` and check the inner one"
                .to_owned()
        }
        Type::Path(path) if is_plain(path, "str") && mutable => {
            "`&mut str` cannot cross the C boundary; take `&mut [u8]`, or `OutBuf<'_, c_char>` \
             to write text"
                .to_owned()
        }
        Type::Path(path) if is_plain(path, "CStr") && mutable => {
            "`&mut CStr` cannot cross the C boundary; take `&CStr`, or `*mut c_char` to write"
                .to_owned()
        }
        Type::Path(path) if (is_plain(path, "str") || is_plain(path, "CStr")) && !param => {
            let name = &path.path.segments.last()?.ident;
            format!(
                "`&{name}` is a fat pointer and cannot be returned to C; return `*const c_char`"
            )
        }
        Type::Path(path) if is_plain(path, "String") => {
            "`&String` cannot cross the C boundary; take `&CStr` or `&str`".to_owned()
        }
        Type::Path(path) if is_plain(path, "OsStr") || is_plain(path, "Path") => {
            let name = &path.path.segments.last()?.ident;
            format!("`&{name}` cannot cross the C boundary; take `&CStr` and convert")
        }
        _ => {
            let reason = stored(elem)?;
            format!("the value behind a pointer from C is read as C left it: {reason}")
        }
    };
    Some(message)
}

/// A message for a type that C's memory may hold an invalid value of, read
/// in place (behind a reference, or as the element of a C array): C may
/// store any bits of the C type there. `None` for the types that take
/// every value, and for the ones only rustc's FFI checks know.
fn stored(ty: &Type) -> Option<String> {
    let message = match peel(ty) {
        Type::BareFn(_) => "C may store NULL for a function pointer; use \
                            `Option<extern \"C\" fn(..)>`"
            .to_owned(),
        Type::Path(path) => {
            let name = path.path.segments.last()?.ident.to_string();
            match name.as_str() {
                "char" if is_plain(path, "char") => {
                    "C may store any 32-bit value where Rust's `char` allows only Unicode \
                     scalar values; use `u32` and convert with `char::from_u32`"
                        .to_owned()
                }
                _ if name.starts_with("NonZero") => format!(
                    "C may store 0, which is undefined behaviour for `{name}`; use \
                     `Option<{name}>` (0 is `None`)"
                ),
                "Box" | "NonNull" => format!(
                    "C may store NULL or a misaligned address, which `{name}` cannot hold; use \
                     a raw pointer (`*mut T`)"
                ),
                "Option" => {
                    let inner = generic_arg(ty, "Option")?;
                    match peel(inner) {
                        Type::Reference(_) => "C may store a misaligned address, which a \
                                               reference cannot hold (and callgate cannot \
                                               check in place); use a raw pointer \
                                               (`*const T`)"
                            .to_owned(),
                        Type::Path(inner_path) if is_plain(inner_path, "Box") => {
                            "C may store a misaligned address, which `Box` cannot hold; use a \
                             raw pointer (`*mut T`)"
                                .to_owned()
                        }
                        _ => return None,
                    }
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    Some(message)
}

fn bare_fn(function: &TypeBareFn, needs_option: bool) -> Option<String> {
    let is_c = function.abi.as_ref().is_some_and(|abi| {
        abi.name
            .as_ref()
            .is_none_or(|name| matches!(name.value().as_str(), "C" | "C-unwind" | "system"))
    });
    if !is_c {
        return Some(
            "Rust `fn` pointers and closures cannot cross the C boundary; take \
             `Option<extern \"C\" fn(..)>`"
                .to_owned(),
        );
    }
    needs_option.then(|| {
        "C may pass NULL for a function pointer; take `Option<extern \"C\" fn(..)>`".to_owned()
    })
}

const DYN: &str = "`dyn Trait` is a fat pointer and cannot cross the C boundary; pass a thin \
                   pointer (`*mut c_void` to a `Box<Box<dyn Trait>>`) or a `#[repr(C)]` struct";
const POINTER_AND_LENGTH: &str =
    "slices cannot cross the C boundary by value; take `&[T]` (a pointer and a length)";
const POINTER_AND_LENGTH_TAIL: &str = "take `&[T]` or `&mut [T]` (a pointer and a length)";

/// Checks the elements of a slice, an `OutBuf` or an owned array: C reads
/// and writes them in place, so they must be FFI-safe by value. (rustc's
/// `improper_ctypes_definitions` check of the element, which the expansion
/// asks for, catches what this misses.)
pub(crate) fn check_element(elem: &Type) -> Option<syn::Error> {
    if let Some(impl_trait) = find_impl_trait(elem) {
        return Some(syn::Error::new_spanned(
            impl_trait,
            "the elements of a C array cannot be `impl Trait`; name the type",
        ));
    }
    let message = match peel(elem) {
        Type::Reference(_) => "the elements of a C array cannot be references: C may put NULL \
                               in it; use `Option<&T>` or `*const T` elements"
            .to_owned(),
        Type::Slice(_) => "the elements of a C array cannot be slices; use a `#[repr(C)]` \
                           struct of a pointer and a length"
            .to_owned(),
        Type::Path(path) if is_text_path(path) => {
            let name = &path.path.segments.last()?.ident;
            format!(
                "`{name}` cannot be the element of a C array; use `*const c_char` elements (C \
                 strings)"
            )
        }
        _ => match value(elem, Position::Param, false) {
            Some(reason) => format!("the elements of a C array must be FFI-safe: {reason}"),
            None => {
                let reason = stored(elem)?;
                format!("the elements of a C array are read as C left them: {reason}")
            }
        },
    };
    Some(syn::Error::new_spanned(elem, message))
}

/// `String`, `str`, `CStr` and the other Rust string types.
fn is_text_path(path: &TypePath) -> bool {
    [
        "String", "CString", "OsString", "PathBuf", "str", "CStr", "OsStr", "Path",
    ]
    .iter()
    .any(|name| is_plain(path, name))
}

fn is_text(ty: &Type) -> bool {
    matches!(peel(ty), Type::Path(path) if is_text_path(path))
}

fn is_dyn(ty: &Type) -> bool {
    matches!(peel(ty), Type::TraitObject(_))
}

/// The first `impl Trait` anywhere inside `ty`.
pub(crate) fn find_impl_trait(ty: &Type) -> Option<&Type> {
    match ty {
        Type::ImplTrait(_) => Some(ty),
        Type::Paren(inner) => find_impl_trait(&inner.elem),
        Type::Group(inner) => find_impl_trait(&inner.elem),
        Type::Reference(inner) => find_impl_trait(&inner.elem),
        Type::Ptr(inner) => find_impl_trait(&inner.elem),
        Type::Slice(inner) => find_impl_trait(&inner.elem),
        Type::Array(inner) => find_impl_trait(&inner.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(find_impl_trait),
        Type::BareFn(function) => function
            .inputs
            .iter()
            .find_map(|arg| find_impl_trait(&arg.ty))
            .or_else(|| match &function.output {
                ReturnType::Type(_, ty) => find_impl_trait(ty),
                ReturnType::Default => None,
            }),
        Type::Path(path) => path.path.segments.iter().find_map(|segment| {
            let PathArguments::AngleBracketed(args) = &segment.arguments else {
                return None;
            };
            args.args.iter().find_map(|arg| match arg {
                GenericArgument::Type(ty) => find_impl_trait(ty),
                _ => None,
            })
        }),
        _ => None,
    }
}
