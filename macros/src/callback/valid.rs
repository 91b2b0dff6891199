//! Everything a `#[c_callback]` fn must satisfy, checked at once: every
//! problem is reported, each at its own tokens.

use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{
    Attribute, GenericArgument, GenericParam, Ident, Lifetime, Meta, PathArguments, ReturnType,
    Type, WherePredicate,
};

use super::ast::{Binding, Callback, Kind, Len, Output, Owned, Param, RESULT_LEN, is_plain, peel};
use super::attr::{Fallback, Options};
use super::ffi::{self, Position};
use crate::fail;

/// `options` is `None` when the options themselves had errors: the checks
/// that depend on them are skipped.
pub(crate) fn check(callback: &Callback, options: Option<&Options>) -> syn::Result<()> {
    let mut errors = Vec::new();
    signature(callback, &mut errors);
    params(callback, &mut errors);
    c_names(callback, &mut errors);
    output(callback, options, &mut errors);
    match fail::combine(errors) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn signature(callback: &Callback, errors: &mut Vec<syn::Error>) {
    let sig = &callback.item.sig;
    let mut error = |tokens: &dyn ToTokens, message: &str| {
        errors.push(syn::Error::new_spanned(tokens, message));
    };
    if let Some(constness) = &sig.constness {
        error(
            constness,
            "#[c_callback] functions cannot be `const`; remove `const`",
        );
    }
    if let Some(asyncness) = &sig.asyncness {
        error(
            asyncness,
            "#[c_callback] functions cannot be `async`: C cannot poll a future; make it a plain \
             fn and block or spawn inside",
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        error(
            unsafety,
            "#[c_callback] functions cannot be `unsafe fn`: C callers cannot uphold a Rust \
             safety contract; make it safe and check the contract inside",
        );
    }
    if let Some(abi) = &sig.abi {
        if let Some(name) = &abi.name {
            if name.value() != "C" {
                error(
                    abi,
                    "#[c_callback] functions are always `extern \"C\"`; remove this ABI",
                );
            }
        }
    }
    for param in &sig.generics.params {
        match param {
            GenericParam::Lifetime(lifetime) => error(
                lifetime,
                "#[c_callback] functions cannot name lifetimes: C's pointers are valid only for \
                 the call, and a lifetime shared by two parameters could let the body keep one \
                 past it; remove the parameter and elide the lifetimes (`&T`, `OutBuf<'_, T>`)",
            ),
            GenericParam::Type(_) | GenericParam::Const(_) => error(
                param,
                "#[c_callback] functions cannot be generic: C needs one concrete function; \
                 write one callback per type",
            ),
        }
    }
    if let Some(clause) = &sig.generics.where_clause {
        for predicate in &clause.predicates {
            if let WherePredicate::Type(_) = predicate {
                error(
                    predicate,
                    "#[c_callback] functions cannot have type bounds: C needs one concrete \
                     function; remove the `where` clause",
                );
            }
        }
    }
    for attr in &callback.item.attrs {
        if let Some(name) = symbol_attribute(attr) {
            error(
                attr,
                &format!(
                    "#[c_callback] exports the function under its own name itself; remove \
                     `#[{name}]` and write `#[c_callback(export = \"symbol\")]` for another \
                     name, or `#[c_callback(local)]` to export none"
                ),
            );
        }
    }
    if let Some(variadic) = &sig.variadic {
        error(
            variadic,
            "#[c_callback] functions cannot be variadic; take a count and a pointer to the values",
        );
    }
    if let Some(receiver) = callback.receiver {
        error(
            receiver,
            "#[c_callback] goes on a free fn and cannot take `self`: C has no receiver; move the \
             fn out of the `impl` and take the value as a pointer parameter",
        );
    }
}

fn params(callback: &Callback, errors: &mut Vec<syn::Error>) {
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
fn c_names(callback: &Callback, errors: &mut Vec<syn::Error>) {
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

fn output(callback: &Callback, options: Option<&Options>, errors: &mut Vec<syn::Error>) {
    let ReturnType::Type(_, ty) = &callback.item.sig.output else {
        return;
    };
    if let Output::OpaqueResult(path) = callback.output {
        errors.push(syn::Error::new_spanned(
            path,
            "#[c_callback] reads the C return type from the `Result`'s arguments; spell them \
             out: `Result<T, E>`",
        ));
        return;
    }
    if let Some(impl_trait) = ffi::find_impl_trait(ty) {
        errors.push(syn::Error::new_spanned(
            impl_trait,
            "#[c_callback] functions cannot return `impl Trait`: C receives one concrete type; \
             name it",
        ));
        return;
    }
    if let Some(owned) = callback.owned {
        owned_output(owned, options, errors);
        return;
    }
    if let Some(free) = options.and_then(|options| options.free.as_ref()) {
        errors.push(syn::Error::new_spanned(
            free,
            "`free` names the function that frees an owned result (`CString`, `Box<T>`, \
             `Vec<T>`, `Box<[T]>`), and this fn returns none; remove it",
        ));
    }
    let Some(c_type) = callback.output.c_type() else {
        return;
    };
    // A type that cannot cross at all (`&str`) is told so before its
    // lifetime is: `&'static str` would not do either.
    if let Some(error) = ffi::check(c_type, Position::Return) {
        errors.push(error);
        return;
    }
    if let Some(lifetime) = returned_borrow(c_type) {
        errors.push(lifetime);
        return;
    }
    let has_fallback = options.is_none_or(|o| o.on_panic.is_some() || o.on_error.is_some());
    if !has_fallback && !matches!(peel(c_type), Type::Ptr(_)) {
        errors.push(syn::Error::new_spanned(
            c_type,
            "#[c_callback] functions that return a value need `on_panic = VALUE` or \
             `on_error = VALUE`: what C receives when the body panics or fails",
        ));
    }
}

/// An owned result needs its free function, fails with NULL rather than a
/// fallback value, and holds FFI-safe elements if it is an array.
fn owned_output(owned: Owned, options: Option<&Options>, errors: &mut Vec<syn::Error>) {
    if let Owned::Slice { elem, .. } = owned {
        errors.extend(ffi::check_element(elem));
    }
    let Some(options) = options else { return };
    if options.free.is_none() {
        errors.push(syn::Error::new_spanned(
            owned.ty(),
            "#[c_callback] functions that return an owned value hand C memory that only Rust can \
             free: declare the free function with `callgate::export_free!(name: Type)` and name \
             it with `#[c_callback(free = name)]`",
        ));
    }
    for fallback in [&options.on_error, &options.on_panic] {
        if let Some(Fallback::Value(value)) = fallback {
            errors.push(syn::Error::new_spanned(
                value,
                "#[c_callback] functions that return an owned value return NULL when they \
                 fail; remove this value (`abort` is allowed)",
            ));
        }
    }
}

/// The lifetimes other than `'_` that `ty` names (not those of a
/// function pointer type's own signature).
fn named_lifetimes(ty: &Type) -> Vec<&Lifetime> {
    let mut found = Vec::new();
    each_type(ty, &mut |ty| match ty {
        Type::Reference(reference) => found.extend(&reference.lifetime),
        Type::Path(path) => {
            for segment in &path.path.segments {
                if let PathArguments::AngleBracketed(arguments) = &segment.arguments {
                    for argument in &arguments.args {
                        if let GenericArgument::Lifetime(lifetime) = argument {
                            found.push(lifetime);
                        }
                    }
                }
            }
        }
        _ => {}
    });
    found.retain(|lifetime| lifetime.ident != "_");
    found
}

/// Calls `visit` with `ty` and each type written inside it (not inside a
/// function pointer type's own signature).
fn each_type<'a>(ty: &'a Type, visit: &mut impl FnMut(&'a Type)) {
    visit(ty);
    match ty {
        Type::Reference(reference) => each_type(&reference.elem, visit),
        Type::Paren(paren) => each_type(&paren.elem, visit),
        Type::Group(group) => each_type(&group.elem, visit),
        Type::Slice(slice) => each_type(&slice.elem, visit),
        Type::Array(array) => each_type(&array.elem, visit),
        Type::Ptr(pointer) => each_type(&pointer.elem, visit),
        Type::Tuple(tuple) => tuple.elems.iter().for_each(|elem| each_type(elem, visit)),
        Type::Path(path) => {
            if let Some(qself) = &path.qself {
                each_type(&qself.ty, visit);
            }
            for segment in &path.path.segments {
                if let PathArguments::AngleBracketed(arguments) = &segment.arguments {
                    for argument in &arguments.args {
                        if let GenericArgument::Type(ty) = argument {
                            each_type(ty, visit);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

/// An error for a reference in the C return type `c_type` that is not
/// `'static`: the trampoline's own parameters are raw pointers, so an elided
/// (or `'_`) lifetime has nothing to borrow from, and C keeps what it gets.
fn returned_borrow(c_type: &Type) -> Option<syn::Error> {
    let mut references = Vec::new();
    each_type(c_type, &mut |ty| {
        if let Type::Reference(reference) = ty {
            references.push(reference);
        }
    });
    references
        .into_iter()
        .find(|reference| {
            reference
                .lifetime
                .as_ref()
                .is_none_or(|lifetime| lifetime.ident != "static")
        })
        .map(|reference| {
            syn::Error::new_spanned(
                reference,
                "a reference returned to C must be `&'static T`: C keeps the pointer after the \
                 call returns, when nothing borrowed for the call is valid any more; return \
                 `&'static T`, or a raw pointer (`*const T`)",
            )
        })
}

/// `no_mangle` or `export_name` where `attr` is one of them, written alone
/// or inside `unsafe(…)`: an attribute choosing the symbol, which the
/// expansion already sets (or, for `local`, leaves out on purpose).
fn symbol_attribute(attr: &Attribute) -> Option<&'static str> {
    let named = |path: &syn::Path| {
        ["no_mangle", "export_name"]
            .into_iter()
            .find(|name| path.is_ident(name))
    };
    if let Some(name) = named(attr.path()) {
        return Some(name);
    }
    if !attr.path().is_ident("unsafe") {
        return None;
    }
    let Meta::List(list) = &attr.meta else {
        return None;
    };
    let inner: Meta = list.parse_args().ok()?;
    named(inner.path())
}
