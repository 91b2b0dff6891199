//! C++ owners of the owned results: for each function that frees one, a
//! deleter; for each exported function that returns one, an overload in
//! the owners' namespace that returns it in a `std::unique_ptr` with that
//! deleter. Written from the records alone: a function's `FREE` field
//! names its free function, whose signature says what it frees.

use crate::comment::doc_comment;
use crate::declaration::{Declaration, Kind};
use crate::format;

/// The out-parameter through which an owned array's length comes back
/// (what `#[c_callback]` names it).
const RESULT_LEN: &str = "size_t *result_len";

/// Writes the owners, inside `#ifdef __cplusplus`, in `namespace`;
/// `nameable` tells the symbols C++ can name.
pub(crate) fn owners(
    out: &mut String,
    declarations: &[Declaration],
    namespace: &str,
    nameable: impl Fn(&str) -> bool,
) {
    let returning: Vec<&Declaration> = declarations
        .iter()
        .filter(|declaration| declaration.kind == Kind::Export && nameable(&declaration.name))
        .filter(|declaration| declaration.free_function().is_some())
        .collect();
    let mut deleters: Vec<(&Declaration, Deleter)> = Vec::new();
    for declaration in &returning {
        let free = declaration.free_function().unwrap_or_default();
        let found = declarations
            .iter()
            .find(|d| d.kind == Kind::Export && d.name == free && nameable(free));
        if let Some(found) = found {
            if !deleters.iter().any(|(known, _)| known.name == free) {
                if let Some(deleter) = Deleter::of(found) {
                    deleters.push((found, deleter));
                }
            }
        }
    }
    deleters.sort_by(|(a, _), (b, _)| a.name.cmp(&b.name));
    out.push_str(&format!(
        "#ifdef __cplusplus\n#include <memory>\n\n\
         /* C++ owners of the results the library hands over: each function below returns\n \
         * its result in a `std::unique_ptr` whose deleter calls the library's free function\n \
         * (an array's deleter holds its length: `get_deleter().len`). Call them qualified:\n \
         * `{namespace}::name(...)`. */\nnamespace {namespace} {{\n"
    ));
    for (free, deleter) in &deleters {
        out.push('\n');
        let name = &free.name;
        out.push_str(&format!("/** Frees with `{name}`. */\nstruct {name} {{\n"));
        match &deleter.len {
            Some(len) => out.push_str(&format!(
                "    size_t {len};\n    void operator()({}) const noexcept {{ ::{name}({}, {len}); }}\n",
                deleter.parameter, deleter.argument
            )),
            None => out.push_str(&format!(
                "    void operator()({}) const noexcept {{ ::{name}({}); }}\n",
                deleter.parameter, deleter.argument
            )),
        }
        out.push_str("};\n");
    }
    for declaration in returning {
        let free = declaration.free_function().unwrap_or_default();
        out.push('\n');
        let Some((_, deleter)) = deleters.iter().find(|(known, _)| known.name == free) else {
            out.push_str(&format!(
                "/* No owner for `{}`: its free function `{free}` is not declared here. */\n",
                declaration.name
            ));
            continue;
        };
        match wrapper(declaration, free, deleter) {
            Some(text) => {
                doc_comment(out, declaration.docs(), "");
                out.push_str(&text);
            }
            None => out.push_str(&format!(
                "/* No owner for `{}`: its C declaration has an unnamed parameter or a \
                 result that is not a plain pointer. */\n",
                declaration.name
            )),
        }
    }
    out.push_str(&format!("\n}} /* namespace {namespace} */\n#endif\n\n"));
}

/// How one free function is called, read from its declaration
/// (`void @(T *value)` or `void @(T *ptr, size_t len)`).
struct Deleter {
    /// The pointer parameter as declared (`PluginSession *value`).
    parameter: String,
    /// Its name.
    argument: String,
    /// The length parameter's name, for an array.
    len: Option<String>,
}

impl Deleter {
    fn of(free: &Declaration) -> Option<Deleter> {
        let (ret, params) = function_parts(&free.signature)?;
        if ret.trim() != "void" {
            return None;
        }
        match params.as_slice() {
            [pointer] => Some(Deleter {
                argument: parameter_name(pointer)?,
                parameter: (*pointer).to_owned(),
                len: None,
            }),
            [pointer, len] if len.starts_with("size_t ") => Some(Deleter {
                argument: parameter_name(pointer)?,
                parameter: (*pointer).to_owned(),
                len: Some(parameter_name(len)?),
            }),
            _ => None,
        }
    }
}

/// The overload of `declaration` that returns its result owned, or `None`
/// when it cannot be written (an unnamed parameter, a result that is not
/// `T *`).
fn wrapper(declaration: &Declaration, free: &str, deleter: &Deleter) -> Option<String> {
    let (ret, mut params) = function_parts(&declaration.signature)?;
    let pointee = ret.trim_end().strip_suffix('*')?.trim_end();
    if pointee.contains(['(', '[']) {
        return None;
    }
    let array = deleter.len.is_some();
    if array && params.pop() != Some(RESULT_LEN) {
        return None;
    }
    let names: Vec<String> = params
        .iter()
        .map(|param| parameter_name(param))
        .collect::<Option<_>>()?;
    let name = &declaration.name;
    let list = if params.is_empty() {
        "void".to_owned()
    } else {
        params.join(", ")
    };
    let mut arguments = names.join(", ");
    if array {
        let owner = format!("std::unique_ptr<{pointee}[], {free}>");
        if !arguments.is_empty() {
            arguments.push_str(", ");
        }
        Some(format!(
            "inline {owner} {name}({list}) {{\n    \
             size_t len = 0;\n    \
             {pointee} *ptr = ::{name}({arguments}&len);\n    \
             return {owner}(ptr, {free}{{len}});\n}}\n"
        ))
    } else {
        let owner = format!("std::unique_ptr<{pointee}, {free}>");
        Some(format!(
            "inline {owner} {name}({list}) {{\n    return {owner}(::{name}({arguments}));\n}}\n"
        ))
    }
}

/// A function signature's return type (the text before the name) and
/// parameters, for a plain `R @(params)`; `None` for other declarators.
fn function_parts(signature: &str) -> Option<(&str, Vec<&str>)> {
    let (ret, rest) = signature.split_once(format::NAME_SLOT)?;
    if ret.contains('(') {
        return None;
    }
    let list = rest.strip_prefix('(')?.strip_suffix(')')?;
    let mut params = Vec::new();
    let (mut depth, mut start) = (0_usize, 0);
    for (at, c) in list.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.checked_sub(1)?,
            ',' if depth == 0 => {
                params.push(list[start..at].trim());
                start = at + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return None;
    }
    let last = list[start..].trim();
    if !(params.is_empty() && last == "void") {
        params.push(last);
    }
    Some((ret, params))
}

/// The name a parameter declaration gives, as `#[c_callback]` writes
/// them: after the `*`s (`const char *text`), inside the parentheses of a
/// pointer to a function or an array (`void (*done)(int32_t)`), or the
/// last word after a type (`int32_t count`); `None` when it has none
/// (a reserved word cannot be a name: the macros escape those).
fn parameter_name(param: &str) -> Option<String> {
    let declarator = match param.find('(') {
        Some(open) => {
            let inner = &param[open + 1..];
            &inner[..inner.find(')')?]
        }
        None => param,
    };
    let words: Vec<&str> = declarator
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty() && *word != "const" && *word != "volatile")
        .collect();
    let last = *words.last()?;
    let named = if param.contains('(') {
        true
    } else if declarator.trim_end().ends_with('*') {
        false
    } else {
        declarator.contains('*') || (words.len() >= 2 && !format::is_reserved(last))
    };
    (named && !format::is_reserved(last)).then(|| last.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_names() {
        for (param, name) in [
            ("const char *text", Some("text")),
            ("size_t text_len", Some("text_len")),
            ("Point p", Some("p")),
            ("unsigned long", None),
            ("const Point", None),
            ("const char *", None),
            ("void (*done)(int32_t code)", Some("done")),
            ("const uint8_t (*bytes)[4]", Some("bytes")),
            ("Session *const *sessions", Some("sessions")),
            ("long long count", Some("count")),
        ] {
            assert_eq!(parameter_name(param).as_deref(), name, "{param}");
        }
    }

    #[test]
    fn function_parts_split_at_the_top_level() {
        assert_eq!(
            function_parts("char *@(void (*f)(int32_t, double), size_t n)"),
            Some(("char *", vec!["void (*f)(int32_t, double)", "size_t n"]))
        );
        assert_eq!(function_parts("void @(void)"), Some(("void ", vec![])));
        assert_eq!(function_parts("uint8_t (*@(void))[4]"), None);
    }
}
