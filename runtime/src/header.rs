#![doc = include_str!("../doc/header.md")]

use std::fmt;

/// Opens a record (see "The record format" above).
const START: &[u8] = b"\0callgate-decl\0";
/// Closes a record.
const END: &[u8] = b"callgate-end\0";
/// The record format this reader understands.
const FORMAT_VERSION: u32 = 1;
/// Where the name goes in a record's signature.
const NAME_SLOT: char = '@';
/// Longest version field looked at: a candidate whose bytes after the start
/// marker are not a short decimal number is not a record.
const MAX_VERSION_DIGITS: usize = 9;

/// Whether a callback is an exported symbol or only a function pointer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// An exported symbol (`#[c_callback]`, `export = "sym"`, the error
    /// API): the header declares the function and its pointer type.
    Export,
    /// A `#[c_callback(local)]`: no symbol; the header declares its
    /// function-pointer type `name_fn`.
    // Not `Local`: a second public item of that name would make rustc spell
    // out `callgate::Local` in every diagnostic about the trait.
    LocalCallback,
}

/// A type defined in Rust that a declaration names (a `#[repr(C)]` struct,
/// an opaque handle, a type alias).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RustType {
    name: String,
    by_value: bool,
}

impl RustType {
    /// The type's name, as in Rust and in the header.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True if C passes or receives it by value somewhere (so C needs its
    /// definition to make the call), false if only behind pointers.
    pub fn by_value(&self) -> bool {
        self.by_value
    }
}

/// One callback's C declaration, as recorded in the compiled library.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Declaration {
    kind: Kind,
    name: String,
    /// The C declaration with [`NAME_SLOT`] where the name goes.
    signature: String,
    types: Vec<RustType>,
    docs: String,
}

impl Declaration {
    /// Whether this is an exported function or a `local` callback.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The exported symbol, or the `local` callback's Rust name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name of its function-pointer type: `name_fn`.
    pub fn pointer_type_name(&self) -> String {
        format!("{}_fn", self.name)
    }

    /// The C prototype without the `;`, e.g.
    /// `int32_t parse(const char *text, double *out)`; `None` for a `local`
    /// callback, which has no symbol to declare.
    pub fn prototype(&self) -> Option<String> {
        match self.kind {
            Kind::Export => Some(self.signature.replace(NAME_SLOT, &self.name)),
            Kind::LocalCallback => None,
        }
    }

    /// The typedef of its function-pointer type without the `;`, e.g.
    /// `typedef int32_t (*parse_fn)(const char *text, double *out)`.
    pub fn pointer_typedef(&self) -> String {
        let declarator = format!("(*{})", self.pointer_type_name());
        format!("typedef {}", self.signature.replace(NAME_SLOT, &declarator))
    }

    /// The Rust-defined types its signature names, sorted by name.
    pub fn rust_types(&self) -> &[RustType] {
        &self.types
    }

    /// The Rust doc comment, one line per `///` line.
    pub fn docs(&self) -> &str {
        &self.docs
    }
}

/// Why a library's declarations could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A record is in a newer format than this reader understands.
    UnsupportedVersion {
        /// Byte offset of the record in the scanned bytes.
        offset: usize,
        /// The record's format version.
        version: u32,
    },
    /// A record starts but does not follow the format.
    Malformed {
        /// Byte offset of the record in the scanned bytes.
        offset: usize,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Two different declarations of one C name.
    Conflict {
        /// The C name declared twice.
        name: String,
        /// One declaration.
        first: String,
        /// The other.
        second: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnsupportedVersion { offset, version } => write!(
                f,
                "the declaration record at byte {offset} has format version {version}, but this \
                 reader understands version {FORMAT_VERSION}: use the `callgate::header` of the \
                 callgate version the library was built with"
            ),
            Error::Malformed { offset, problem } => write!(
                f,
                "the declaration record at byte {offset} is malformed: {problem}"
            ),
            Error::Conflict {
                name,
                first,
                second,
            } => write!(
                f,
                "`{name}` is declared twice, differently:\n    {first}\n    {second}\nrename one \
                 of the callbacks (`export = \"...\"`), or read one library at a time"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Reads the declarations recorded in a compiled library: the bytes of a
/// `cdylib`, `staticlib`, rlib, object file or executable, in any object
/// format (it is a byte scan).
///
/// Returns them sorted by name, identical records once (a callback scanned
/// in two artifacts, or in an rlib's code and metadata, is one callback);
/// the bytes of several files may be concatenated and read at once.
///
/// # Errors
///
/// [`Error::UnsupportedVersion`] when the library was built by a newer
/// callgate, [`Error::Malformed`] for a damaged record, [`Error::Conflict`]
/// when two callbacks declare the same C name differently.
pub fn extract(library: &[u8]) -> Result<Vec<Declaration>, Error> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(position) = find(&library[from..], START) {
        let offset = from + position;
        match record(library, offset)? {
            Some((declaration, end)) => {
                found.push(declaration);
                from = end;
            }
            None => from = offset + 1,
        }
    }
    let declarations = sorted(found);
    if let Some(pair) = declarations
        .windows(2)
        .find(|pair| pair[0].name == pair[1].name)
    {
        return Err(Error::Conflict {
            name: pair[0].name.clone(),
            first: describe(&pair[0]),
            second: describe(&pair[1]),
        });
    }
    Ok(declarations)
}

fn describe(declaration: &Declaration) -> String {
    declaration
        .prototype()
        .unwrap_or_else(|| declaration.pointer_typedef())
}

/// Sorted by name (then by content, for determinism), identical ones once.
fn sorted(mut declarations: Vec<Declaration>) -> Vec<Declaration> {
    declarations.sort_by(|a, b| {
        (&a.name, a.kind, &a.signature, &a.types, &a.docs).cmp(&(
            &b.name,
            b.kind,
            &b.signature,
            &b.types,
            &b.docs,
        ))
    });
    declarations.dedup();
    declarations
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Parses the record whose start marker is at `offset`: `Ok(None)` if the
/// marker is not followed by a version field (the marker bytes occur by
/// themselves, e.g. in this reader's own code), else the declaration and
/// the offset just past the record.
fn record(bytes: &[u8], offset: usize) -> Result<Option<(Declaration, usize)>, Error> {
    let mut cursor = offset + START.len();
    let digits = bytes[cursor..]
        .iter()
        .take(MAX_VERSION_DIGITS + 1)
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    if digits == 0 || digits > MAX_VERSION_DIGITS || bytes.get(cursor + digits) != Some(&0) {
        return Ok(None);
    }
    let version: u32 = std::str::from_utf8(&bytes[cursor..cursor + digits])
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(u32::MAX);
    if version != FORMAT_VERSION {
        return Err(Error::UnsupportedVersion { offset, version });
    }
    cursor += digits + 1;
    let malformed = |problem| Error::Malformed { offset, problem };
    let mut fields = [""; 5];
    for field in &mut fields {
        let length = bytes[cursor..]
            .iter()
            .position(|&byte| byte == 0)
            .ok_or(malformed("it is cut off"))?;
        *field = std::str::from_utf8(&bytes[cursor..cursor + length])
            .map_err(|_| malformed("a field is not UTF-8"))?;
        cursor += length + 1;
    }
    if !bytes[cursor..].starts_with(END) {
        return Err(malformed("the end marker is missing"));
    }
    let [kind, name, signature, types, docs] = fields;
    let kind = match kind {
        "export" => Kind::Export,
        "local" => Kind::LocalCallback,
        _ => return Err(malformed("unknown kind")),
    };
    if name.is_empty() {
        return Err(malformed("the name is empty"));
    }
    if signature.matches(NAME_SLOT).count() != 1 {
        return Err(malformed("the signature has no single name slot"));
    }
    let mut types: Vec<RustType> = types
        .split_whitespace()
        .map(|word| match word.strip_prefix('*') {
            Some(name) => RustType {
                name: name.to_owned(),
                by_value: false,
            },
            None => RustType {
                name: word.to_owned(),
                by_value: true,
            },
        })
        .collect();
    types.sort();
    let declaration = Declaration {
        kind,
        name: name.to_owned(),
        signature: signature.to_owned(),
        types,
        docs: docs.to_owned(),
    };
    Ok(Some((declaration, cursor + END.len())))
}

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
    /// get no forward declaration.
    pub defined_types: Vec<String>,
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
}

/// Writes the C header declaring `declarations` (from [`extract`]).
///
/// The header has an include guard, includes `<stddef.h>`, `<stdint.h>`
/// and (in C) `<stdbool.h>`, then the prelude, then inside `extern "C"`
/// (for C++): a `typedef struct Name Name;` forward declaration for each
/// Rust type not in `defined_types`, the function-pointer typedef of each
/// `local` callback, and the prototype and function-pointer typedef of each
/// exported function, each with its doc comment. The order is by name and
/// identical declarations appear once, so the same library always gives
/// the same header.
pub fn render(declarations: &[Declaration], options: &HeaderOptions) -> String {
    let declarations = sorted(declarations.to_vec());
    let guard = guard(&options.guard);
    let mut out = String::new();
    out.push_str("/* Generated by callgate::header from the compiled library; do not edit. */\n");
    out.push_str(&format!("#ifndef {guard}\n#define {guard}\n\n"));
    out.push_str("#include <stddef.h>\n#include <stdint.h>\n");
    out.push_str("#ifndef __cplusplus\n#include <stdbool.h>\n#endif\n\n");
    let prelude = options.prelude.trim_end();
    if !prelude.is_empty() {
        out.push_str(prelude);
        out.push_str("\n\n");
    }
    out.push_str("#ifdef __cplusplus\nextern \"C\" {\n#endif\n");

    let types = forward_declared(&declarations, &options.defined_types);
    if !types.is_empty() {
        out.push_str("\n/* Types defined in Rust. */\n");
        for RustType { name, by_value } in &types {
            out.push_str(&format!("typedef struct {name} {name};"));
            if *by_value {
                out.push_str(&format!(
                    " /* passed by value: define struct {name} before calling */"
                ));
            }
            out.push('\n');
        }
    }

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
        doc_comment(&mut out, &declaration.docs);
        out.push_str(&declaration.pointer_typedef());
        out.push_str(";\n");
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
        doc_comment(&mut out, &declaration.docs);
        if let Some(prototype) = declaration.prototype() {
            out.push_str(&prototype);
            out.push_str(";\n");
        }
        out.push_str(&declaration.pointer_typedef());
        out.push_str(";\n");
    }

    out.push_str("\n#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n");
    out.push_str(&format!("#endif /* {guard} */\n"));
    out
}

/// The Rust types to forward-declare: named by some declaration, not
/// defined by the prelude; passed by value if any declaration does.
fn forward_declared(declarations: &[Declaration], defined: &[String]) -> Vec<RustType> {
    let mut types: Vec<RustType> = Vec::new();
    for used in declarations.iter().flat_map(|d| &d.types) {
        if defined.contains(&used.name) || !is_c_identifier(&used.name) {
            continue;
        }
        match types.iter_mut().find(|known| known.name == used.name) {
            Some(known) => known.by_value |= used.by_value,
            None => types.push(used.clone()),
        }
    }
    types.sort();
    types
}

fn not_declarable(out: &mut String, declaration: &Declaration) {
    let name = comment_text(&declaration.name);
    out.push_str(&format!(
        "/* `{name}` is not a C identifier: it cannot be declared in C. */\n"
    ));
}

fn doc_comment(out: &mut String, docs: &str) {
    if docs.trim().is_empty() {
        return;
    }
    out.push_str("/**\n");
    for line in docs.lines() {
        let line = comment_text(line);
        if line.is_empty() {
            out.push_str(" *\n");
        } else {
            out.push_str(&format!(" * {line}\n"));
        }
    }
    out.push_str(" */\n");
}

/// `text` made safe inside a `/* */` comment: it cannot close the comment
/// or open a nested one (which `-Wcomment` reports).
fn comment_text(text: &str) -> String {
    text.replace("*/", "* /").replace("/*", "/ *")
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

fn is_c_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Record bytes as the macros write them.
    fn record_bytes(version: u32, fields: [&str; 5]) -> Vec<u8> {
        let mut bytes = START.to_vec();
        let version = version.to_string();
        for field in std::iter::once(version.as_str()).chain(fields) {
            bytes.extend_from_slice(field.as_bytes());
            bytes.push(0);
        }
        bytes.extend_from_slice(END);
        bytes
    }

    fn parse_record() -> Vec<u8> {
        record_bytes(
            1,
            [
                "export",
                "parse",
                "int32_t @(const char *text, const Point *at, Session *session)",
                "*Point *Session",
                "Parses `text`.\n\nReturns -1 on error. A */ comment.",
            ],
        )
    }

    fn compare_record() -> Vec<u8> {
        record_bytes(
            1,
            [
                "local",
                "compare",
                "int @(const void *a, const void *b)",
                "",
                "",
            ],
        )
    }

    #[test]
    fn finds_records_among_other_bytes() {
        let mut library = b"\x7fELF junk \0callgate-decl\0 not a record ".to_vec();
        library.extend(parse_record());
        library.extend(b"\0\0\x01more junk");
        library.extend(compare_record());
        library.extend(parse_record()); // the same record again: once
        let found = extract(&library).expect("valid records");
        assert_eq!(found.len(), 2);
        let (compare, parse) = (&found[0], &found[1]);
        assert_eq!(compare.kind(), Kind::LocalCallback);
        assert_eq!(compare.prototype(), None);
        assert_eq!(
            compare.pointer_typedef(),
            "typedef int (*compare_fn)(const void *a, const void *b)"
        );
        assert_eq!(parse.kind(), Kind::Export);
        assert_eq!(
            parse.prototype().as_deref(),
            Some("int32_t parse(const char *text, const Point *at, Session *session)")
        );
        assert_eq!(
            parse.pointer_typedef(),
            "typedef int32_t (*parse_fn)(const char *text, const Point *at, Session *session)"
        );
        let types: Vec<(&str, bool)> = parse
            .rust_types()
            .iter()
            .map(|t| (t.name(), t.by_value()))
            .collect();
        assert_eq!(types, [("Point", false), ("Session", false)]);
    }

    #[test]
    fn no_records_is_no_declarations() {
        assert_eq!(extract(b""), Ok(Vec::new()));
        assert_eq!(extract(b"\0callgate-decl\0"), Ok(Vec::new()));
        assert_eq!(extract(b"\0callgate-decl\0\0"), Ok(Vec::new()));
    }

    #[test]
    fn reports_newer_and_broken_records() {
        let newer = record_bytes(2, ["export", "f", "void @(void)", "", ""]);
        assert_eq!(
            extract(&newer),
            Err(Error::UnsupportedVersion {
                offset: 0,
                version: 2
            })
        );
        let mut cut = parse_record();
        cut.truncate(40);
        let mut library = b"pad".to_vec();
        library.extend(cut);
        assert_eq!(
            extract(&library),
            Err(Error::Malformed {
                offset: 3,
                problem: "it is cut off"
            })
        );
        let unknown = record_bytes(1, ["struct", "f", "void @(void)", "", ""]);
        assert!(matches!(
            extract(&unknown),
            Err(Error::Malformed {
                problem: "unknown kind",
                ..
            })
        ));
        let mut unterminated = parse_record();
        unterminated.truncate(unterminated.len() - 2);
        unterminated.extend(b"\0\0\0\0\0\0");
        assert!(matches!(
            extract(&unterminated),
            Err(Error::Malformed {
                problem: "the end marker is missing",
                ..
            })
        ));
    }

    #[test]
    fn conflicting_declarations_are_an_error() {
        let mut library = record_bytes(1, ["export", "f", "void @(int32_t a)", "", ""]);
        library.extend(record_bytes(
            1,
            ["export", "f", "void @(int64_t a)", "", ""],
        ));
        let error = extract(&library).expect_err("a conflict");
        assert_eq!(
            error.to_string(),
            "`f` is declared twice, differently:\n    void f(int32_t a)\n    void f(int64_t a)\n\
             rename one of the callbacks (`export = \"...\"`), or read one library at a time"
        );
    }

    #[test]
    fn renders_a_complete_header() {
        let mut library = parse_record();
        library.extend(compare_record());
        let declarations = extract(&library).unwrap();
        let options = HeaderOptions::new("my-lib.h")
            .with_prelude("#include \"point.h\"\n")
            .with_defined_type("Point");
        let header = render(&declarations, &options);
        let expected = r#"/* Generated by callgate::header from the compiled library; do not edit. */
#ifndef my_lib_h
#define my_lib_h

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "point.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Types defined in Rust. */
typedef struct Session Session;

/* Function-pointer types of the `local` callbacks, to pass to C. */

typedef int (*compare_fn)(const void *a, const void *b);

/* Exported functions, each with its pointer type (to cast `dlsym`'s result to). */

/**
 * Parses `text`.
 *
 * Returns -1 on error. A * / comment.
 */
int32_t parse(const char *text, const Point *at, Session *session);
typedef int32_t (*parse_fn)(const char *text, const Point *at, Session *session);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* my_lib_h */
"#;
        assert_eq!(header, expected);
        // Deterministic whatever the input order and duplication.
        let mut shuffled = declarations.clone();
        shuffled.reverse();
        shuffled.extend(declarations.clone());
        assert_eq!(render(&shuffled, &options), header);
    }

    #[test]
    fn by_value_types_and_odd_names() {
        let mut library = record_bytes(
            1,
            ["export", "make", "Point @(double x, double y)", "Point", ""],
        );
        library.extend(record_bytes(
            1,
            ["export", "odd.name", "void @(void)", "", ""],
        ));
        let header = render(&extract(&library).unwrap(), &HeaderOptions::new("9"));
        assert!(header.contains("#ifndef _9\n"), "{header}");
        assert!(header.contains(
            "typedef struct Point Point; /* passed by value: define struct Point before calling */"
        ));
        assert!(header.contains("Point make(double x, double y);\n"));
        assert!(header.contains("/* `odd.name` is not a C identifier"));
        assert!(!header.contains("odd.name("));
    }

    // The records written by the real macros, in this test binary.

    /// A doc line.
    #[crate::c_callback(crate = crate, on_error = -1)]
    fn header_unit_test_callback(text: &str, out: Option<&mut u64>) -> Result<i32, String> {
        if let Some(out) = out {
            *out = text.len() as u64;
        }
        Ok(0)
    }

    #[crate::c_callback(crate = crate, local)]
    fn header_unit_test_local(_: *const core::ffi::c_void) {}

    #[crate::c_callback(crate = crate, export = "header_unit_test_renamed", on_error = 0)]
    fn header_unit_test_rust_name(value: u8) -> u8 {
        value
    }

    #[crate::c_callback(crate = crate)]
    #[cfg(any())]
    fn header_unit_test_compiled_out() {}

    crate::export_error_api!(header_unit_test);

    #[test]
    fn reads_the_records_the_macros_write() {
        let _ = header_unit_test_local as extern "C" fn(*const core::ffi::c_void);
        let exe = std::env::current_exe().expect("the test binary's path");
        let bytes = std::fs::read(&exe).expect("read the test binary");
        let found = extract(&bytes).expect("the test binary's records");
        let find = |name: &str| {
            found
                .iter()
                .find(|d| d.name() == name)
                .unwrap_or_else(|| panic!("no record for {name} in {found:#?}"))
        };
        let callback = find("header_unit_test_callback");
        assert_eq!(
            callback.prototype().as_deref(),
            Some("int32_t header_unit_test_callback(const char *text, uint64_t *out)")
        );
        assert_eq!(callback.docs(), "A doc line.");
        assert_eq!(
            find("header_unit_test_renamed").prototype().as_deref(),
            Some("uint8_t header_unit_test_renamed(uint8_t value)")
        );
        assert!(
            !found
                .iter()
                .any(|d| d.name().contains("rust_name") || d.name().contains("compiled_out")),
            "{found:#?}"
        );
        assert_eq!(
            find("header_unit_test_local").pointer_typedef(),
            "typedef void (*header_unit_test_local_fn)(const void *)"
        );
        assert_eq!(
            find("header_unit_test_last_error_message")
                .prototype()
                .as_deref(),
            Some("int header_unit_test_last_error_message(char *buf, size_t len)")
        );
        assert_eq!(
            find("header_unit_test_last_error_length")
                .prototype()
                .as_deref(),
            Some("size_t header_unit_test_last_error_length(void)")
        );
        assert_eq!(
            find("header_unit_test_clear_last_error")
                .prototype()
                .as_deref(),
            Some("void header_unit_test_clear_last_error(void)")
        );
    }
}
