//! The typed view of a `#[c_callback]` fn: the user's syn nodes, borrowed and
//! classified by how each crosses the C boundary. Building it cannot fail;
//! `valid` reports whatever does not fit.

use syn::{
    Attribute, FnArg, GenericArgument, Ident, ItemFn, Pat, PathArguments, Receiver, ReturnType,
    Type, TypePath, TypeReference,
};

pub(crate) struct Callback<'a> {
    pub item: &'a ItemFn,
    pub receiver: Option<&'a Receiver>,
    pub params: Vec<Param<'a>>,
    pub output: Output<'a>,
}

pub(crate) struct Param<'a> {
    pub binding: Binding<'a>,
    pub ty: &'a Type,
    /// The `#[local]` helper attribute.
    pub local: Option<&'a Attribute>,
    /// Any other attribute: rejected.
    pub other_attrs: Vec<&'a Attribute>,
    pub kind: Kind<'a>,
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
    /// `&T`, `&mut T`, `Option<&T>`, `Option<&mut T>`: a pointer to `elem`.
    Ref {
        mutable: bool,
        nullable: bool,
        elem: &'a Type,
    },
    /// `&CStr` or `Option<&CStr>`: `const char *`.
    CStr { nullable: bool },
    /// `&str` or `Option<&str>`: `const char *`, checked for UTF-8.
    Str { nullable: bool },
    /// `#[local] x: &mut T`: this thread's `T`, not part of the C signature.
    Local { elem: &'a Type },
}

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

impl Output<'_> {
    /// The type C receives, `None` for `()`.
    pub fn c_type(&self) -> Option<&Type> {
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
                    let (local, other_attrs): (Vec<_>, Vec<_>) = typed
                        .attrs
                        .iter()
                        .partition(|attr| attr.path().is_ident("local"));
                    let local = local.first().copied();
                    let ty = &*typed.ty;
                    let kind = match (local, mut_ref(ty)) {
                        (Some(_), Some(elem)) => Kind::Local { elem },
                        _ => classify(ty),
                    };
                    params.push(Param {
                        binding,
                        ty,
                        local,
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
        Callback {
            item,
            receiver,
            params,
            output,
        }
    }

    /// Whether the trampoline dereferences a pointer C passed, and so is an
    /// `unsafe extern "C" fn`.
    pub fn is_unsafe(&self) -> bool {
        self.params.iter().any(|param| {
            matches!(
                param.kind,
                Kind::Ref { .. } | Kind::CStr { .. } | Kind::Str { .. }
            )
        })
    }
}

fn classify(ty: &Type) -> Kind<'_> {
    if let Some(inner) = generic_arg(ty, "Option") {
        return match classify(inner) {
            Kind::Ref { mutable, elem, .. } => Kind::Ref {
                mutable,
                nullable: true,
                elem,
            },
            Kind::CStr { .. } => Kind::CStr { nullable: true },
            Kind::Str { .. } => Kind::Str { nullable: true },
            _ => Kind::Value,
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
        Type::Path(path) if !mutable && is_plain(path, "CStr") => Kind::CStr { nullable: false },
        Type::Path(path) if !mutable && is_plain(path, "str") => Kind::Str { nullable: false },
        // `&mut CStr`, `&[T]`, `&dyn Trait`, `&&T` … are left to `valid`.
        Type::Path(path) if is_plain(path, "CStr") || is_plain(path, "str") => Kind::Value,
        Type::Path(_) | Type::Array(_) | Type::Ptr(_) | Type::BareFn(_) | Type::Tuple(_) => {
            Kind::Ref {
                mutable,
                nullable: false,
                elem,
            }
        }
        _ => Kind::Value,
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
