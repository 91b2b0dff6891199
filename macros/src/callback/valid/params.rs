//! The checks of a `#[c_callback]` fn's parameters: their names, types
//! and lifetimes, their attributes (`#[local]`, `#[user_data]`, `#[void]`,
//! `#[len]`), and the names of the length parameters the C signature adds.

use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{Attribute, Ident, Lifetime, Meta, Type};

use super::named_lifetimes;
use crate::callback::ast::{
    Binding, Callback, Kind, Len, Owned, Param, RESULT_LEN, is_plain, peel,
};
use crate::callback::ffi::{self, Position};

pub(super) fn params(callback: &Callback, errors: &mut Vec<syn::Error>) {
    let mut local_types: Vec<String> = Vec::new();
    let mut has_user_data = false;
    for param in &callback.params {
        if let Binding::Pattern(pat) = param.binding {
            errors.push(syn::Error::new_spanned(
                pat,
                "#[c_callback] parameters must be plain names; destructure inside the body",
            ));
        }
        // Those the fn declares have their own error (`signature`).
        let declared = |lifetime: &Lifetime| {
            callback
                .item
                .sig
                .generics
                .lifetimes()
                .any(|param| param.lifetime == *lifetime)
        };
        let undeclared = named_lifetimes(param.ty)
            .into_iter()
            .filter(|l| !declared(l));
        errors.extend(undeclared.map(|lifetime| {
            syn::Error::new_spanned(
                lifetime,
                format!(
                    "a #[c_callback] parameter cannot name a lifetime: `{lifetime}` would let the \
                     body keep what C passed after the call returns, and C's pointers are valid \
                     only for the call; elide it (`&T`, `OutBuf<'_, T>`)"
                ),
            )
        }));
        for attr in &param.other_attrs {
            errors.push(syn::Error::new_spanned(
                attr,
                "#[c_callback] parameters take no attributes other than `#[local]`, `#[len]`, \
                 `#[user_data]` and `#[void]`",
            ));
        }
        if let Some(attr) = param.void {
            if !void(param, attr, errors) {
                continue;
            }
        }
        if let Some(attr) = param.user_data {
            user_data(param, attr, has_user_data, errors);
            has_user_data = true;
            continue;
        }
        if let Some(local) = param.local {
            if let Some(len) = param.len {
                errors.push(syn::Error::new_spanned(
                    len,
                    "#[local] parameters are not passed by C and have no length; remove `#[len]`",
                ));
            }
            if !matches!(local.meta, Meta::Path(_)) {
                errors.push(syn::Error::new_spanned(
                    &local.meta,
                    "`#[local]` takes no arguments; write `#[local]`",
                ));
            }
            match param.kind {
                Kind::Local { elem } if ffi::find_impl_trait(elem).is_some() => {
                    errors.push(syn::Error::new_spanned(
                        elem,
                        "#[local] parameters name their type; `impl Trait` cannot be one",
                    ));
                }
                Kind::Local { elem } => {
                    let key = elem.to_token_stream().to_string();
                    if local_types.contains(&key) {
                        errors.push(syn::Error::new_spanned(
                            elem,
                            format!(
                                "two #[local] parameters of type `{key}`: a thread has one \
                                 `{key}`; take it once"
                            ),
                        ));
                    } else {
                        local_types.push(key);
                    }
                }
                _ => errors.push(syn::Error::new_spanned(
                    param.ty,
                    "#[local] parameters must be `&mut T` where `T: callgate::Local`",
                )),
            }
            continue;
        }
        if let Some(attr) = param.len {
            len_attribute(callback, param, attr, errors);
        }
        match param.kind {
            Kind::Slice { elem, .. } | Kind::OutBuf { elem, .. } => {
                errors.extend(ffi::check_element(elem));
            }
            Kind::StrLen { .. } => {}
            _ => errors.extend(ffi::check(param.ty, Position::Param)),
        }
    }
}

/// `#[user_data]` on `param`; `earlier` when an earlier parameter of the
/// fn has one too.
fn user_data(param: &Param, attr: &Attribute, earlier: bool, errors: &mut Vec<syn::Error>) {
    if !matches!(attr.meta, Meta::Path(_)) && param.user_data_from.is_none() {
        errors.push(syn::Error::new_spanned(
            &attr.meta,
            "`#[user_data]` takes nothing (C passes the `void *` in this parameter) or \
             `from = EXPR`, an expression over the C parameters that gives it: \
             `#[user_data(from = unsafe { sqlite3_user_data(ctx) })]`",
        ));
    }
    if let Some(local) = param.local {
        errors.push(syn::Error::new_spanned(
            local,
            "a parameter is either `#[user_data]` (C passes it) or `#[local]` (C does not); \
             remove one",
        ));
    }
    if let Some(len) = param.len {
        errors.push(syn::Error::new_spanned(
            len,
            "`#[user_data]` is one `void *` without a length; remove `#[len]`",
        ));
    }
    if param.local.is_none() && !matches!(param.kind, Kind::UserData { .. }) {
        errors.push(syn::Error::new_spanned(
            param.ty,
            "#[user_data] parameters are `&T`, `&mut T`, `Option<&T>` or `Option<&mut T>` of a \
             sized `T`: C passes a `void *` to it",
        ));
    }
    if earlier {
        errors.push(syn::Error::new_spanned(
            attr,
            "a #[c_callback] fn takes one `#[user_data]` parameter: the `void *` C passes back \
             (or `from = …` reaches); take any other `void *` as `*mut c_void` and convert it \
             with `callgate::UserData::ref_from_raw`",
        ));
    }
}

/// `#[void]` on `param`: a reference C passes as `void *` (an element of
/// `qsort`'s array). False when it is misused, so that the parameter's
/// other checks are skipped.
fn void(param: &Param, attr: &Attribute, errors: &mut Vec<syn::Error>) -> bool {
    let before = errors.len();
    if !matches!(attr.meta, Meta::Path(_)) {
        errors.push(syn::Error::new_spanned(
            &attr.meta,
            "`#[void]` takes no arguments; write `#[void]`",
        ));
    }
    let other = [
        (param.local, "`#[local]` (C does not pass it)"),
        (
            param.user_data,
            "`#[user_data]` (C passes it back as given)",
        ),
        (param.len, "`#[len]` (a `void *` has no length)"),
    ];
    for (attr, what) in other {
        if let Some(attr) = attr {
            errors.push(syn::Error::new_spanned(
                attr,
                format!("a parameter is either `#[void]` or {what}; remove one"),
            ));
        }
    }
    let message = match param.kind {
        Kind::Ref { void: true, .. } => None,
        // Reported above.
        _ if errors.len() > before => None,
        Kind::CStr { .. } | Kind::Str { .. } | Kind::StrLen { .. } => Some(
            "C passes a string as `const char *`, not `void *`: remove `#[void]` (`&CStr` and \
             `&str` are `const char *` already)",
        ),
        Kind::Slice { .. } => Some(
            "`#[void]` is one `void *` without a length: take `&T` for one element, or a slice \
             without `#[void]` (a pointer and a length)",
        ),
        _ => Some(
            "#[void] parameters are `&T`, `&mut T`, `Option<&T>` or `Option<&mut T>`: C passes \
             a `const void *` (`void *` for `&mut`) to a `T`, as `qsort` passes its elements",
        ),
    };
    if let Some(message) = message {
        errors.push(syn::Error::new_spanned(param.ty, message));
    }
    errors.len() == before
}

/// `#[len]` or `#[len = count]` on `param`.
fn len_attribute(
    callback: &Callback,
    param: &Param,
    attr: &Attribute,
    errors: &mut Vec<syn::Error>,
) {
    let Some(len) = param.kind.len() else {
        errors.push(syn::Error::new_spanned(
            attr,
            "`#[len]` goes on a slice (`&[T]`, `&mut [T]`), a `&str` or an `OutBuf` parameter",
        ));
        return;
    };
    let well_formed = matches!(
        (&attr.meta, len),
        (Meta::Path(_), _) | (Meta::NameValue(_), Len::Param(_))
    );
    if !well_formed {
        errors.push(syn::Error::new_spanned(
            &attr.meta,
            "`#[len]` takes nothing, or the name of the parameter that holds the length: \
             `#[len = count]`",
        ));
        return;
    }
    let Len::Param(name) = len else { return };
    let Some(target) = callback.param(name) else {
        errors.push(syn::Error::new_spanned(
            name,
            format!("`#[len = {name}]` names no parameter of this fn; add `{name}: usize`"),
        ));
        return;
    };
    if matches!(param.binding, Binding::Ident(ident) if ident == name) {
        errors.push(syn::Error::new_spanned(
            name,
            "a parameter cannot be its own length; name an integer parameter",
        ));
    } else if !target.is_c_param() || !is_integer(target.ty) {
        let ty = target.ty.to_token_stream().to_string();
        errors.push(syn::Error::new_spanned(
            name,
            format!(
                "`#[len = {name}]` names a parameter of type `{ty}`; the length must be an \
                 integer parameter (`usize`, `u32`, `c_int` …)"
            ),
        ));
    }
}

/// Whether `ty` is spelled as an integer type C can pass.
fn is_integer(ty: &Type) -> bool {
    const INTEGERS: &str = "\
        u8 u16 u32 u64 usize i8 i16 i32 i64 isize \
        c_schar c_uchar c_short c_ushort c_int c_uint c_long c_ulong c_longlong c_ulonglong \
        size_t ssize_t c_size_t c_ssize_t ptrdiff_t c_ptrdiff_t intptr_t uintptr_t \
        int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t";
    matches!(peel(ty), Type::Path(path)
        if INTEGERS.split_whitespace().any(|name| is_plain(path, name)))
}

/// The parameter names of the C signature are distinct: the length
/// parameters the attribute adds (`data_len`, `result_len`) must not take
/// the name of another parameter.
pub(super) fn c_names(callback: &Callback, errors: &mut Vec<syn::Error>) {
    let named: Vec<(&Param, &Ident)> = callback
        .params
        .iter()
        .filter_map(|param| match param.binding {
            Binding::Ident(ident) if param.is_c_param() => Some((param, ident)),
            _ => None,
        })
        .collect();
    let user = |name: &str| {
        named
            .iter()
            .map(|&(_, ident)| ident)
            .find(|ident| ident.unraw() == name)
    };
    // Each added parameter's name, and the slice it is the length of.
    let mut added: Vec<(String, Option<&Ident>)> = named
        .iter()
        .filter(|(param, _)| matches!(param.kind.len(), Some(Len::Next)))
        .map(|&(_, ident)| (format!("{}_len", ident.unraw()), Some(ident)))
        .collect();
    if let Some(Owned::Slice { .. }) = callback.owned {
        added.push((RESULT_LEN.to_owned(), None));
    }
    for (index, (name, slice)) in added.iter().enumerate() {
        let earlier = added[..index].iter().any(|(other, _)| other == name);
        let message = match (slice, user(name)) {
            (Some(slice), Some(_)) => format!(
                "the length of `{slice}` is passed in a parameter `{name}` after it, and this \
                 parameter has that name; make it the length with `#[len = {name}]` on \
                 `{slice}`, or rename it"
            ),
            (None, Some(_)) => format!(
                "this fn returns an owned array, whose length C receives through a last \
                 parameter `{name}`; rename this parameter"
            ),
            (Some(slice), None) if earlier => format!(
                "the length of `{slice}` would be passed in a parameter `{name}`, which \
                 another length parameter already is; rename `{slice}`"
            ),
            _ => continue,
        };
        let blame = user(name)
            .or(*slice)
            .expect("a clash has a parameter to blame");
        errors.push(syn::Error::new_spanned(blame, message));
    }
}
