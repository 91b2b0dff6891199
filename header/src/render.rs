//! Writing the C header of a list of declarations.

use std::collections::BTreeMap;

use crate::comment::{comment_text, doc_comment};
use crate::declaration::{Declaration, Kind, sorted};
use crate::format;
use crate::scan::Error;
use crate::types::{self, Types, is_c_identifier};

/// How [`render`] writes the header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HeaderOptions {
    /// The include guard macro, e.g. `PLUGIN_H`. Characters that cannot be
    /// in a C identifier become `_`; empty means `CALLGATE_H`.
    pub guard: String,
    /// C text placed after the standard includes, before the declarations:
    /// further `#include`s, and the definitions of Rust types C needs to
    /// see (list those in `defined_types`).
    pub prelude: String,
    /// Rust types the prelude defines (or another header declares): they
    /// get no forward declaration and no definition.
    pub defined_types: Vec<String>,
    /// The C++ namespace of the owners of owned results, if the header
    /// has them (see [`render`]).
    pub cxx_owners: Option<String>,
}

impl HeaderOptions {
    /// Options with include guard `guard` and nothing else.
    pub fn new(guard: impl Into<String>) -> HeaderOptions {
        HeaderOptions {
            guard: guard.into(),
            ..HeaderOptions::default()
        }
    }

    /// Sets the prelude (see [`HeaderOptions::prelude`]).
    pub fn with_prelude(mut self, prelude: impl Into<String>) -> HeaderOptions {
        self.prelude = prelude.into();
        self
    }

    /// Adds a type the prelude defines (see [`HeaderOptions::defined_types`]).
    pub fn with_defined_type(mut self, name: impl Into<String>) -> HeaderOptions {
        self.defined_types.push(name.into());
        self
    }

    /// Adds C++ owners of the owned results, in `namespace` (see
    /// [`HeaderOptions::cxx_owners`]).
    pub fn with_cxx_owners(mut self, namespace: impl Into<String>) -> HeaderOptions {
        self.cxx_owners = Some(namespace.into());
        self
    }
}

/// Writes the C header declaring `declarations` (from
/// [`extract`](crate::extract)).
///
/// The header has an include guard, includes `<stddef.h>`, `<stdint.h>`
/// and (in C) `<stdbool.h>`, then the prelude, then inside `extern "C"`
/// (for C++), after the calling-convention and linkage macros
/// `PREFIX_CALL` and `PREFIX_API` named after the guard (`__cdecl` and
/// `__declspec(dllimport)` on Windows, empty elsewhere): the types defined
/// in Rust that are not in `defined_types` — a
/// `typedef struct Name Name;` forward declaration for each one the
/// library names but does not define (an opaque handle), then the
/// definition of each one it defines (`#[derive(CEnum)]`,
/// `#[derive(CValue)]`), after the types it uses — the function-pointer typedef of each
/// `local` callback, the struct type and `extern const` declaration of
/// each table of `local` callbacks, and the prototype and function-pointer
/// typedef of each exported function, each with its doc comment. The order is by name and
/// identical declarations appear once, so the same library always gives
/// the same header. With [`HeaderOptions::cxx_owners`], C++ code gets, in
/// that namespace, a deleter for each function that frees an owned result
/// and, for each exported function that returns one, an overload that
/// returns it in a `std::unique_ptr` with that deleter.
///
/// A symbol C and C++ cannot name — a keyword or other reserved name
/// ([`format::is_reserved`]: `double`, `class`), or a macro of the header —
/// gets a comment instead of its declaration, saying to look it up with
/// `dlsym`; its type is still declared.
///
/// # Errors
///
/// [`Error::NameClash`] when two items would have one C name — a `local`
/// callback `x` and an exported function `x_fn` (the name of `x`'s pointer
/// type), two different declarations of one name, or a Rust type and a
/// function of one name — which C and C++ compilers reject;
/// [`Error::MissingCallback`] when a table names a `local` callback that is
/// not among `declarations`; [`Error::TypeCycle`] when typedefs of
/// pointers name each other, which C cannot declare.
pub fn render(declarations: &[Declaration], options: &HeaderOptions) -> Result<String, Error> {
    let declarations = sorted(declarations.to_vec());
    let types = types::plan(&declarations, &options.defined_types)?;
    let guard = guard(&options.guard);
    let linkage = Linkage::new(&guard);
    let macros = [
        guard.as_str(),
        &linkage.api,
        &linkage.call,
        &linkage.static_link,
    ];
    let nameable = |name: &str| !format::is_reserved(name) && !macros.contains(&name);
    check_names(&declarations, &types, nameable)?;
    if let Some(namespace) = &options.cxx_owners {
        if !is_c_identifier(namespace) || format::is_reserved(namespace) {
            return Err(Error::CxxNamespace {
                namespace: namespace.clone(),
            });
        }
    }
    let mut out = String::new();
    out.push_str("/* Generated by callgate-header from the compiled library; do not edit. */\n");
    out.push_str(&format!("#ifndef {guard}\n#define {guard}\n\n"));
    out.push_str("#include <stddef.h>\n#include <stdint.h>\n");
    out.push_str("#ifndef __cplusplus\n#include <stdbool.h>\n#endif\n\n");
    let prelude = options.prelude.trim_end();
    if !prelude.is_empty() {
        out.push_str(prelude);
        out.push_str("\n\n");
    }
    linkage.define(&mut out);
    out.push_str("#ifdef __cplusplus\nextern \"C\" {\n#endif\n");

    types.write(&mut out);

    let locals: Vec<&Declaration> = declarations
        .iter()
        .filter(|declaration| declaration.kind == Kind::LocalCallback)
        .collect();
    if !locals.is_empty() {
        out.push_str("\n/* Function-pointer types of the `local` callbacks, to pass to C. */\n");
    }
    for declaration in locals {
        out.push('\n');
        if !is_c_identifier(&declaration.name) {
            not_declarable(&mut out, declaration);
            continue;
        }
        doc_comment(&mut out, declaration.docs(), "");
        out.push_str(&linkage.pointer_typedef(declaration));
        out.push_str(";\n");
    }

    let tables: Vec<&Declaration> = declarations
        .iter()
        .filter(|declaration| declaration.kind == Kind::Table)
        .collect();
    if !tables.is_empty() {
        out.push_str(
            "\n/* Tables of `local` callbacks, exported as read-only data: one function pointer \
             per callback. */\n",
        );
    }
    for declaration in tables {
        out.push('\n');
        if !is_c_identifier(&declaration.name) {
            not_declarable(&mut out, declaration);
            continue;
        }
        doc_comment(&mut out, declaration.docs(), "");
        out.push_str(&declaration.pointer_typedef());
        out.push_str(";\n");
        if !nameable(&declaration.name) {
            let lookup = format!(": it is a `const {}`", declaration.pointer_type_name());
            not_nameable(&mut out, &declaration.name, &lookup);
        } else if let Some(prototype) = declaration.prototype() {
            // Data a program imports from a DLL needs `dllimport` too.
            out.push_str(&linkage.api);
            out.push(' ');
            out.push_str(&prototype);
            out.push_str(";\n");
        }
    }

    let exports: Vec<&Declaration> = declarations
        .iter()
        .filter(|declaration| declaration.kind == Kind::Export)
        .collect();
    if !exports.is_empty() {
        out.push_str(
            "\n/* Exported functions, each with its pointer type (to cast `dlsym`'s result to). */\n",
        );
    }
    for declaration in exports {
        out.push('\n');
        if !is_c_identifier(&declaration.name) {
            not_declarable(&mut out, declaration);
            continue;
        }
        doc_comment(&mut out, declaration.docs(), "");
        if nameable(&declaration.name) {
            out.push_str(&linkage.prototype(declaration));
            out.push_str(";\n");
        } else {
            let lookup = format!(" and call it through `{}`", declaration.pointer_type_name());
            not_nameable(&mut out, &declaration.name, &lookup);
        }
        out.push_str(&linkage.pointer_typedef(declaration));
        out.push_str(";\n");
    }

    out.push_str("\n#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n");
    if let Some(namespace) = &options.cxx_owners {
        crate::cxx::owners(&mut out, &declarations, namespace, nameable);
    }
    out.push_str(&format!("#endif /* {guard} */\n"));
    Ok(out)
}

/// Fails if two items of the header would have one C name. A symbol that
/// is not `nameable` is not declared, so it takes no name.
fn check_names(
    declarations: &[Declaration],
    types: &Types,
    nameable: impl Fn(&str) -> bool,
) -> Result<(), Error> {
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut claim = |name: String, item: String| match names.get(&name) {
        Some(first) => Err(Error::NameClash {
            name,
            first: first.clone(),
            second: item,
        }),
        None => {
            names.insert(name, item);
            Ok(())
        }
    };
    for opaque in &types.opaque {
        let name = opaque.name();
        claim(
            name.to_owned(),
            format!("the type defined in Rust `{name}`"),
        )?;
    }
    for (definition, _) in &types.definitions {
        let name = &definition.name;
        claim(name.clone(), format!("the type defined in Rust `{name}`"))?;
        if definition.kind == Kind::Enum {
            for member in definition.members() {
                let constant = member.declaration;
                claim(
                    constant.to_owned(),
                    format!("the constant `{constant}` of the enum `{name}`"),
                )?;
            }
        }
    }
    for declaration in declarations {
        if !is_c_identifier(&declaration.name) || declaration.kind.is_type() {
            continue;
        }
        let name = &declaration.name;
        let typedef = declaration.pointer_typedef();
        match declaration.kind {
            Kind::Export => {
                let prototype = declaration.describe();
                if nameable(name) {
                    claim(
                        name.clone(),
                        format!("the exported function `{name}`: {prototype}"),
                    )?;
                }
                claim(
                    declaration.pointer_type_name(),
                    format!("the pointer type of the exported function `{name}`: {typedef}"),
                )?;
            }
            Kind::LocalCallback => claim(
                declaration.pointer_type_name(),
                format!("the pointer type of the `local` callback `{name}`: {typedef}"),
            )?,
            Kind::Table => {
                for field in declaration.table_fields() {
                    let declared = declarations.iter().any(|callback| {
                        callback.kind == Kind::LocalCallback && callback.name == field
                    });
                    if !declared {
                        return Err(Error::MissingCallback {
                            table: name.clone(),
                            field: field.to_owned(),
                        });
                    }
                }
                let table_type = declaration.pointer_type_name();
                if nameable(name) {
                    claim(
                        name.clone(),
                        format!("the table `{name}` of type `{table_type}`"),
                    )?;
                }
                claim(
                    table_type.clone(),
                    format!("the struct type `{table_type}` of the table `{name}`"),
                )?;
            }
            Kind::Enum | Kind::Struct | Kind::Typedef => {}
        }
    }
    Ok(())
}

fn not_declarable(out: &mut String, declaration: &Declaration) {
    let name = comment_text(&declaration.name);
    out.push_str(&format!(
        "/* `{name}` is not a C identifier: it cannot be declared in C. */\n"
    ));
}

/// Says that C and C++ cannot declare the symbol `name`, and how a host
/// reaches it: `lookup`.
fn not_nameable(out: &mut String, name: &str, lookup: &str) {
    out.push_str(&format!(
        "/* C and C++ cannot declare `{name}` by its name (a keyword, macro or reserved name).\n \
         * Look it up with `dlsym` (`GetProcAddress`){lookup}. */\n"
    ));
}

/// The two macros every declaration of the header uses, named after its
/// include guard (`PLUGIN_H` → `PLUGIN_API`, `PLUGIN_CALL`): the calling
/// convention, `__cdecl` on Windows (what Rust's `extern "C"` is there; on
/// 64-bit Windows the only convention, on 32-bit Windows not the default of
/// every compiler), and the linkage, `__declspec(dllimport)` on Windows
/// unless `PREFIX_STATIC` is defined (for a `staticlib`). Both are defined
/// only if the includer has not defined them already.
struct Linkage {
    api: String,
    call: String,
    static_link: String,
}

impl Linkage {
    fn new(guard: &str) -> Linkage {
        let upper = guard.to_ascii_uppercase();
        let prefix = upper.strip_suffix("_H").filter(|prefix| !prefix.is_empty());
        let prefix = prefix.unwrap_or(&upper);
        Linkage {
            api: format!("{prefix}_API"),
            call: format!("{prefix}_CALL"),
            static_link: format!("{prefix}_STATIC"),
        }
    }

    fn define(&self, out: &mut String) {
        let Linkage {
            api,
            call,
            static_link,
        } = self;
        out.push_str(&format!(
            "/* How the functions below are called and linked: `__cdecl` on Windows,\n \
             * imported from the DLL unless {static_link} is defined (a static library).\n \
             * Define {call} or {api} before including this header to override them. */\n\
             #ifndef {call}\n#ifdef _WIN32\n#define {call} __cdecl\n#else\n#define {call}\n#endif\n#endif\n\
             #ifndef {api}\n#if defined(_WIN32) && !defined({static_link})\n\
             #define {api} __declspec(dllimport)\n#else\n#define {api}\n#endif\n#endif\n\n"
        ));
    }

    /// `API ret CALL name(params)`.
    fn prototype(&self, declaration: &Declaration) -> String {
        let name = format!("{} {}", self.call, declaration.name);
        format!(
            "{} {}",
            self.api,
            declaration.signature.replace(format::NAME_SLOT, &name)
        )
    }

    /// `typedef ret (CALL *name_fn)(params)`.
    fn pointer_typedef(&self, declaration: &Declaration) -> String {
        let declarator = format!("({} *{})", self.call, declaration.pointer_type_name());
        format!(
            "typedef {}",
            declaration
                .signature
                .replace(format::NAME_SLOT, &declarator)
        )
    }
}

fn guard(requested: &str) -> String {
    let mut guard: String = requested
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if guard.is_empty() {
        guard.push_str("CALLGATE_H");
    }
    if guard.starts_with(|c: char| c.is_ascii_digit()) {
        guard.insert(0, '_');
    }
    guard
}
