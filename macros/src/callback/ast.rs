//! The typed view of a `#[c_callback]` fn: the user's syn nodes, borrowed and
//! classified by how each crosses the C boundary. Building it cannot fail;
//! `valid` reports whatever does not fit.

use syn::{
    Attribute, Expr, ExprPath, FnArg, GenericArgument, Ident, ItemFn, Meta, MetaNameValue, Pat,
    PathArguments, Receiver, ReturnType, Type, TypePath, TypeReference,
};

pub(crate) struct Callback<'a> {
    pub item: &'a ItemFn,
    pub receiver: Option<&'a Receiver>,
    pub params: Vec<Param<'a>>,
    pub output: Output<'a>,
    /// The C return value is an owned result C frees later.
    pub owned: Option<Owned<'a>>,
}

pub(crate) struct Param<'a> {
    pub binding: Binding<'a>,
    pub ty: &'a Type,
    /// The `#[local]` helper attribute.
    pub local: Option<&'a Attribute>,
    /// The `#[len]` or `#[len = param]` helper attribute.
    pub len: Option<&'a Attribute>,
    /// The `#[user_data]` helper attribute.
    pub user_data: Option<&'a Attribute>,
    /// `EXPR` of `#[user_data(from = EXPR)]`: the `void *` comes from an
    /// expression over the C parameters, not from a parameter of its own.
    pub user_data_from: Option<Expr>,
    /// The `#[void]` helper attribute.
    pub void: Option<&'a Attribute>,
    /// Any other attribute: rejected.
    pub other_attrs: Vec<&'a Attribute>,
    pub kind: Kind<'a>,
}

impl Param<'_> {
    /// Whether C passes this parameter: not a `#[local]`, nor user data
    /// that `#[user_data(from = …)]` reaches.
    pub fn is_c_param(&self) -> bool {
        self.local.is_none() && self.user_data_from.is_none()
    }
}

pub(crate) enum Binding<'a> {
    /// `name` or `mut name`.
    Ident(&'a Ident),
    /// `_`.
    Wild,
    /// Anything else (tuples, `ref x`, `x @ ..`): rejected.
    Pattern(&'a Pat),
}

/// How a parameter arrives from C.
pub(crate) enum Kind<'a> {
    /// Passed through unchanged: C sees the Rust type.
    Value,
    /// `&T`, `&mut T`, `Option<&T>`, `Option<&mut T>`: a pointer to `elem`;
    /// `void` for a `#[void]` parameter, which C declares as `void *`.
    Ref {
        mutable: bool,
        nullable: bool,
        void: bool,
        elem: &'a Type,
    },
    /// `&CStr` or `Option<&CStr>`: `const char *`.
    CStr { nullable: bool },
    /// `&str` or `Option<&str>`: `const char *`, checked for UTF-8.
    Str { nullable: bool },
    /// `#[local] x: &mut T`: this thread's `T`, not part of the C signature.
    Local { elem: &'a Type },
    /// `#[user_data] x: &T` (`&mut T`, or an `Option` of either): a
    /// `void *` to the caller's `elem`.
    UserData {
        mutable: bool,
        nullable: bool,
        elem: &'a Type,
    },
    /// `&[T]`, `&mut [T]` and their `Option`s: a pointer to `elem` and a
    /// length.
    Slice {
        mutable: bool,
        nullable: bool,
        elem: &'a Type,
        len: Len<'a>,
    },
    /// `#[len] text: &str` (or `Option<&str>`): a `const char *` and a
    /// length in bytes, checked for UTF-8.
    StrLen { nullable: bool, len: Len<'a> },
    /// `OutBuf<'_, T>`: a `T *` and a length the body writes into.
    OutBuf { elem: &'a Type, len: Len<'a> },
}

/// Where the length of a slice, a `#[len] &str` or an `OutBuf` comes from.
#[derive(Clone, Copy)]
pub(crate) enum Len<'a> {
    /// Its own `size_t NAME_len` parameter, right after the pointer.
    Next,
    /// `#[len = count]`: the integer parameter `count`.
    Param(&'a Ident),
}

impl<'a> Kind<'a> {
    /// The length of a (pointer, length) kind.
    pub fn len(&self) -> Option<Len<'a>> {
        match *self {
            Kind::Slice { len, .. } | Kind::StrLen { len, .. } | Kind::OutBuf { len, .. } => {
                Some(len)
            }
            _ => None,
        }
    }
}

/// A return type that hands C memory to free with the callback's `free`
/// function.
#[derive(Clone, Copy)]
pub(crate) enum Owned<'a> {
    /// `CString`, `Box<T>` or an `Option` of them: C receives one pointer.
    Value(&'a Type),
    /// `Vec<T>`, `Box<[T]>` or an `Option` of them: C receives a pointer to
    /// the first `elem` and the length through `size_t *result_len`.
    Slice { ty: &'a Type, elem: &'a Type },
}

impl<'a> Owned<'a> {
    /// The Rust type returned (the `Ok` type of a `Result`).
    pub fn ty(&self) -> &'a Type {
        match *self {
            Owned::Value(ty) | Owned::Slice { ty, .. } => ty,
        }
    }
}

/// The name of the `size_t *` out-parameter that receives the length of an
/// owned array.
pub(crate) const RESULT_LEN: &str = "result_len";

pub(crate) enum Output<'a> {
    /// No return type, or `()`.
    Unit,
    /// Returned to C as it is.
    Value(&'a Type),
    /// `Result<T, E>`: C receives `ok`.
    Result { ok: &'a Type },
    /// `Result` spelled without generic arguments (`fmt::Result`): the C
    /// type cannot be seen; rejected.
    OpaqueResult(&'a TypePath),
}

impl<'a> Output<'a> {
    /// The type C receives, `None` for `()`.
    pub fn c_type(&self) -> Option<&'a Type> {
        match *self {
            Output::Unit => None,
            Output::Value(ty) => Some(ty),
            Output::Result { ok, .. } if is_unit(ok) => None,
            Output::Result { ok, .. } => Some(ok),
            Output::OpaqueResult(_) => None,
        }
    }
}

impl<'a> Callback<'a> {
    pub fn from_syn(item: &'a ItemFn) -> Self {
        let mut receiver = None;
        let mut params = Vec::new();
        for input in &item.sig.inputs {
            match input {
                FnArg::Receiver(r) => receiver = Some(r),
                FnArg::Typed(typed) => {
                    let binding = match &*typed.pat {
                        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                            Binding::Ident(&p.ident)
                        }
                        Pat::Wild(_) => Binding::Wild,
                        other => Binding::Pattern(other),
                    };
                    let mut local = None;
                    let mut len = None;
                    let mut user_data = None;
                    let mut void = None;
                    let mut other_attrs = Vec::new();
                    for attr in &typed.attrs {
                        if attr.path().is_ident("local") && local.is_none() {
                            local = Some(attr);
                        } else if attr.path().is_ident("len") && len.is_none() {
                            len = Some(attr);
                        } else if attr.path().is_ident("user_data") && user_data.is_none() {
                            user_data = Some(attr);
                        } else if attr.path().is_ident("void") && void.is_none() {
                            void = Some(attr);
                        } else {
                            other_attrs.push(attr);
                        }
                    }
                    let ty = &*typed.ty;
                    let mut kind = match (local, mut_ref(ty)) {
                        (Some(_), Some(elem)) => Kind::Local { elem },
                        _ if user_data.is_some() => user_data_kind(ty),
                        _ => classify(ty, len.map(len_of)),
                    };
                    let user_data_from = user_data.and_then(user_data_from);
                    if let (Some(_), Kind::Ref { void, .. }) = (void, &mut kind) {
                        *void = true;
                    }
                    params.push(Param {
                        binding,
                        ty,
                        local,
                        len,
                        user_data,
                        user_data_from,
                        void,
                        other_attrs,
                        kind,
                    });
                }
            }
        }
        let output = match &item.sig.output {
            ReturnType::Default => Output::Unit,
            ReturnType::Type(_, ty) => output(ty),
        };
        let owned = output.c_type().and_then(owned);
        Callback {
            item,
            receiver,
            params,
            output,
            owned,
        }
    }

    /// Whether the trampoline dereferences a pointer C passed, and so is an
    /// `unsafe extern "C" fn`.
    pub fn is_unsafe(&self) -> bool {
        let pointer_param = self.params.iter().any(|param| {
            matches!(
                param.kind,
                Kind::Ref { .. }
                    | Kind::CStr { .. }
                    | Kind::Str { .. }
                    | Kind::Slice { .. }
                    | Kind::StrLen { .. }
                    | Kind::OutBuf { .. }
                    | Kind::UserData { .. }
            )
        });
        pointer_param || matches!(self.owned, Some(Owned::Slice { .. }))
    }

    /// The parameter named `name`, if any.
    pub fn param(&self, name: &Ident) -> Option<&Param<'a>> {
        self.params
            .iter()
            .find(|param| matches!(param.binding, Binding::Ident(ident) if ident == name))
    }
}

/// The length a `#[len]` attribute asks for; a malformed one (reported by
/// `valid`) counts as `#[len]`.
fn len_of(attr: &Attribute) -> Len<'_> {
    match &attr.meta {
        Meta::NameValue(MetaNameValue {
            value: Expr::Path(ExprPath {
                qself: None, path, ..
            }),
            ..
        }) => path.get_ident().map_or(Len::Next, Len::Param),
        _ => Len::Next,
    }
}

/// The `EXPR` of `#[user_data(from = EXPR)]`; `None` for `#[user_data]`
/// and for a malformed attribute (which `valid` reports).
pub(crate) fn user_data_from(attr: &Attribute) -> Option<Expr> {
    let Meta::List(list) = &attr.meta else {
        return None;
    };
    let MetaNameValue { path, value, .. } = list.parse_args().ok()?;
    path.is_ident("from").then_some(value)
}

/// The kind of a parameter's type; `len` is its `#[len]`, if any.
fn classify<'a>(ty: &'a Type, len: Option<Len<'a>>) -> Kind<'a> {
    if let Some(inner) = generic_arg(ty, "Option") {
        return match classify(inner, len) {
            Kind::Ref {
                mutable,
                void,
                elem,
                ..
            } => Kind::Ref {
                mutable,
                nullable: true,
                void,
                elem,
            },
            Kind::CStr { .. } => Kind::CStr { nullable: true },
            Kind::Str { .. } => Kind::Str { nullable: true },
            Kind::StrLen { len, .. } => Kind::StrLen {
                nullable: true,
                len,
            },
            Kind::Slice {
                mutable, elem, len, ..
            } => Kind::Slice {
                mutable,
                nullable: true,
                elem,
                len,
            },
            _ => Kind::Value,
        };
    }
    if let Some(elem) = generic_arg(ty, "OutBuf") {
        return Kind::OutBuf {
            elem,
            len: len.unwrap_or(Len::Next),
        };
    }
    let Type::Reference(TypeReference {
        mutability, elem, ..
    }) = peel(ty)
    else {
        return Kind::Value;
    };
    let mutable = mutability.is_some();
    let elem = &**elem;
    match peel(elem) {
        Type::Slice(slice) => Kind::Slice {
            mutable,
            nullable: false,
            elem: &slice.elem,
            len: len.unwrap_or(Len::Next),
        },
        Type::Path(path) if !mutable && is_plain(path, "CStr") => Kind::CStr { nullable: false },
        Type::Path(path) if !mutable && is_plain(path, "str") => match len {
            Some(len) => Kind::StrLen {
                nullable: false,
                len,
            },
            None => Kind::Str { nullable: false },
        },
        // `&mut CStr`, `&[T]`, `&dyn Trait`, `&&T` … are left to `valid`.
        Type::Path(path) if is_plain(path, "CStr") || is_plain(path, "str") => Kind::Value,
        Type::Path(_) | Type::Array(_) | Type::Ptr(_) | Type::BareFn(_) | Type::Tuple(_) => {
            Kind::Ref {
                mutable,
                nullable: false,
                void: false,
                elem,
            }
        }
        _ => Kind::Value,
    }
}

/// The kind of a `#[user_data]` parameter: a reference (or an `Option` of
/// one) to a sized type, else `Value` (which `valid` rejects).
fn user_data_kind(ty: &Type) -> Kind<'_> {
    let (nullable, reference) = match generic_arg(ty, "Option") {
        Some(inner) => (true, inner),
        None => (false, ty),
    };
    let Type::Reference(TypeReference {
        mutability, elem, ..
    }) = peel(reference)
    else {
        return Kind::Value;
    };
    match peel(elem) {
        Type::Path(path) if is_plain(path, "str") || is_plain(path, "CStr") => Kind::Value,
        Type::Path(_) | Type::Array(_) | Type::Tuple(_) | Type::Ptr(_) | Type::BareFn(_) => {
            Kind::UserData {
                mutable: mutability.is_some(),
                nullable,
                elem,
            }
        }
        _ => Kind::Value,
    }
}

/// The owned result `ty` is, if it is one. `Box<dyn Trait>`, `Box<str>`
/// and the like are not: `ffi` rejects them.
pub(crate) fn owned(ty: &Type) -> Option<Owned<'_>> {
    let inner = generic_arg(ty, "Option").unwrap_or(ty);
    let Type::Path(path) = peel(inner) else {
        return None;
    };
    if is_plain(path, "CString") {
        return Some(Owned::Value(ty));
    }
    if let Some(elem) = generic_arg(inner, "Vec") {
        return Some(Owned::Slice { ty, elem });
    }
    let boxed = generic_arg(inner, "Box")?;
    match peel(boxed) {
        Type::Slice(slice) => Some(Owned::Slice {
            ty,
            elem: &slice.elem,
        }),
        Type::TraitObject(_) | Type::ImplTrait(_) => None,
        Type::Path(path)
            if ["str", "CStr", "OsStr", "Path"]
                .iter()
                .any(|n| is_plain(path, n)) =>
        {
            None
        }
        _ => Some(Owned::Value(ty)),
    }
}

fn output(ty: &Type) -> Output<'_> {
    if is_unit(ty) {
        return Output::Unit;
    }
    if let Type::Path(path) = peel(ty) {
        if path.qself.is_none() {
            if let Some(last) = path.path.segments.last() {
                if last.ident == "Result" {
                    return match first_type_arg(&last.arguments) {
                        Some(ok) => Output::Result { ok },
                        None => Output::OpaqueResult(path),
                    };
                }
            }
        }
    }
    Output::Value(ty)
}

/// Whether the elements of a slice parameter are raw pointers: C declares
/// such an array `T **` even when the callee only reads it (`sqlite3_value
/// **argv`, `char **argv`), so C passes the shared slice as `*mut`.
pub(crate) fn is_pointer_array(elem: &Type) -> bool {
    matches!(peel(elem), Type::Ptr(_))
}

/// Strips parentheses and invisible groups.
pub(crate) fn peel(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Paren(inner) => ty = &inner.elem,
            Type::Group(inner) => ty = &inner.elem,
            _ => return ty,
        }
    }
}

pub(crate) fn is_unit(ty: &Type) -> bool {
    matches!(peel(ty), Type::Tuple(tuple) if tuple.elems.is_empty())
}

/// `&mut T` → `T`.
pub(crate) fn mut_ref(ty: &Type) -> Option<&Type> {
    match peel(ty) {
        Type::Reference(TypeReference {
            mutability: Some(_),
            elem,
            ..
        }) => Some(elem),
        _ => None,
    }
}

/// Whether every value C can pass is a valid `ty`, as its tokens show: the
/// primitive integers, floats and `bool`, raw pointers, and nullable
/// function pointers and boxes. The trampoline takes these as they are;
/// any other type passed by value goes through the runtime's `CArg`.
pub(crate) fn takes_every_value(ty: &Type) -> bool {
    const PRIMITIVES: [&str; 13] = [
        "i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize", "f32", "f64",
        "bool",
    ];
    match peel(ty) {
        Type::Ptr(_) | Type::BareFn(_) => true,
        Type::Path(path) if path.qself.is_none() => {
            PRIMITIVES.iter().any(|name| path.path.is_ident(name))
                || generic_arg(ty, "Option").is_some_and(|inner| {
                    matches!(peel(inner), Type::BareFn(_)) || generic_arg(inner, "Box").is_some()
                })
        }
        _ => false,
    }
}

/// A path whose last segment is `name` without generic arguments.
pub(crate) fn is_plain(path: &TypePath, name: &str) -> bool {
    path.qself.is_none()
        && path
            .path
            .segments
            .last()
            .is_some_and(|last| last.ident == name && last.arguments.is_none())
}

/// `Name<T, ..>` → `T`, for a path whose last segment is `name`.
pub(crate) fn generic_arg<'a>(ty: &'a Type, name: &str) -> Option<&'a Type> {
    let Type::Path(path) = peel(ty) else {
        return None;
    };
    let last = path.path.segments.last()?;
    if path.qself.is_some() || last.ident != name {
        return None;
    }
    first_type_arg(&last.arguments)
}

fn first_type_arg(arguments: &PathArguments) -> Option<&Type> {
    let PathArguments::AngleBracketed(args) = arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}
