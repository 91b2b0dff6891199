//! The declaration record format: what `#[c_callback]`, the derives and
//! `export_error_api!` write into a library, and what `callgate-header`
//! reads back.
//!
//! A library holds each declaration as one record, the descriptor of an ELF
//! note of owner [`NOTE_OWNER`] and type [`NOTE_TYPE`], in a
//! [`NOTE_SECTION`] section on ELF targets (a plain `#[used]` static
//! elsewhere). The record is NUL-terminated fields between two markers:
//!
//! ```text
//! \0callgate-decl\0 VERSION\0 KIND\0 NAME\0 SIGNATURE\0 TYPES\0 DOCS\0 FREE\0 callgate-end\0
//! ```
//!
//! - `VERSION`: [`VERSION`] in decimal;
//! - `KIND`: [`EXPORT`], [`LOCAL`] or [`TABLE`] for a function or a table,
//!   [`ENUM`], [`STRUCT`] or [`TYPEDEF`] for a type defined in Rust;
//! - `NAME`: the exported symbol, the `local` callback's name, or the
//!   type's name;
//! - `SIGNATURE`: the C declaration with [`NAME_SLOT`] where the name goes,
//!   e.g. `int32_t @(const char *text)`, its parameter names already ones
//!   C and C++ accept (see [`is_reserved`]); for a [`TABLE`], the struct
//!   type's name and then its fields, separated by [`TYPE_SEPARATOR`]; for
//!   a type, as each kind says;
//! - `TYPES`: the types defined in Rust that the signature names, sorted by
//!   name and separated by [`TYPE_SEPARATOR`], each prefixed with
//!   [`BEHIND_POINTER`] when C only sees it behind pointers;
//! - `DOCS`: the doc comment's lines, joined by `\n`; for an [`ENUM`] or a
//!   [`STRUCT`], the type's and then each member's, separated by
//!   [`MEMBER_SEPARATOR`];
//! - `FREE`: for a function that returns an owned result, the exported
//!   function that frees it; empty otherwise.
//!
//! No field contains a NUL. A reader meeting another `VERSION` reports it
//! rather than guessing.
//!
//! The writer (the `callgate-macros` crate) and the reader (the
//! `callgate-header` crate) compile this one file.

/// The section the notes go in on ELF targets.
pub const NOTE_SECTION: &str = ".note.callgate";

/// The owner ("name") of the notes; the note holds it NUL-terminated.
pub const NOTE_OWNER: &str = "callgate";

/// The note type of declaration records: `"CGd\x01"` read as a
/// little-endian `u32`.
pub const NOTE_TYPE: u32 = 0x0164_4743;

/// Opens a record. It starts and ends with NUL so that it cannot be the
/// middle of an ordinary string.
pub const START: &[u8] = b"\0callgate-decl\0";

/// Closes a record.
pub const END: &[u8] = b"callgate-end\0";

/// Terminates each field.
pub const FIELD_END: u8 = 0;

/// The format version this file describes.
pub const VERSION: u32 = 2;

/// `KIND` of an exported function: the header declares its prototype and
/// its function-pointer type.
pub const EXPORT: &str = "export";

/// `KIND` of a `#[c_callback(local)]`: no symbol; the header declares its
/// function-pointer type.
pub const LOCAL: &str = "local";

/// `KIND` of a table of `local` callbacks (`callgate::export_table!`): an
/// exported, read-only struct whose fields are function pointers. `NAME` is
/// its symbol; `SIGNATURE` is `Type field field …`, where each field is
/// named after a `local` callback the library records and has that
/// callback's function-pointer type (in C, a field name [`is_reserved`]
/// reports takes a trailing `_`); `TYPES` is empty.
pub const TABLE: &str = "table";

/// `KIND` of a `#[derive(CEnum)]` enum: the header defines `NAME` as the
/// integer of its `repr` and names each variant's value. `SIGNATURE` is
/// that integer's C type (`uint8_t`, `int`), then one `CONSTANT=VALUE` per
/// variant (`MODE_FAST=0`, the value in decimal), separated by
/// [`MEMBER_SEPARATOR`]; `TYPES` is empty.
pub const ENUM: &str = "enum";

/// `KIND` of a `#[derive(CValue)]` `#[repr(C)]` struct: the header defines
/// it. `SIGNATURE` is the C declaration of each field, in order, separated
/// by [`MEMBER_SEPARATOR`] (`double x`, `uint8_t bytes[16]`,
/// `void (*done)(int32_t)`), field names as for parameters.
pub const STRUCT: &str = "struct";

/// `KIND` of a `#[derive(CValue)]` `#[repr(transparent)]` struct: the
/// header defines it as its field's type. `SIGNATURE` is that declaration
/// with [`NAME_SLOT`] for the name (`double @`).
pub const TYPEDEF: &str = "typedef";

/// Separates the members of an [`ENUM`] or a [`STRUCT`] in `SIGNATURE`,
/// and their docs in `DOCS`: the ASCII unit separator, which neither C nor
/// a doc comment holds (the writer drops it from docs).
pub const MEMBER_SEPARATOR: char = '\u{1f}';

/// Stands for the declarator in `SIGNATURE`: the header writes the name
/// there for the prototype, `(*name_fn)` for the function-pointer typedef.
pub const NAME_SLOT: &str = "@";

/// Separates the names in `TYPES`.
pub const TYPE_SEPARATOR: char = ' ';

/// Marks a name in `TYPES` that C only sees behind pointers.
pub const BEHIND_POINTER: char = '*';

/// The words C and C++ code cannot use as a name of its own: the keywords
/// of C11 (6.4.1), those C23 adds (its 6.4.1 keeps C11's `_Alignas` …
/// `_Thread_local` as alternative spellings), those C++20 adds ([lex.key],
/// Table 5) and its alternative representations of operators (Table 6,
/// [lex.digraph]), which are reserved too; then object-like macros that are
/// not reserved identifiers: `NULL` from `<stddef.h>`, which the header
/// includes, and what GNU C modes (`-std=gnu11`) predefine.
///
/// `import`, `module`, `final` and `override` are not C++ keywords but
/// identifiers with a special meaning ([lex.name]) only where a
/// declaration or a line begins, never in a parameter list: they are not
/// here.
#[rustfmt::skip]
pub const RESERVED_WORDS: &[&str] = &[
    // C11.
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool",
    "_Complex", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local",
    // C23.
    "alignas", "alignof", "bool", "constexpr", "false", "nullptr", "static_assert", "thread_local",
    "true", "typeof", "typeof_unqual", "_BitInt", "_Decimal32", "_Decimal64", "_Decimal128",
    // C++20, Table 5.
    "asm", "catch", "char8_t", "char16_t", "char32_t", "class", "concept", "consteval",
    "constinit", "const_cast", "co_await", "co_return", "co_yield", "decltype", "delete",
    "dynamic_cast", "explicit", "export", "friend", "mutable", "namespace", "new", "noexcept",
    "operator", "private", "protected", "public", "reinterpret_cast", "requires", "static_cast",
    "template", "this", "throw", "try", "typeid", "typename", "using", "virtual", "wchar_t",
    // C++20, Table 6.
    "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq",
    // Macros.
    "NULL", "linux", "unix", "i386",
];

/// True if C or C++ code cannot use `name` as a name of its own: it is one
/// of [`RESERVED_WORDS`], a name C reserves for the compiler and its
/// library (`__int128`, `_Float128`: it may be a keyword there), or a
/// limit macro of `<stdint.h>` (`INT8_MAX`, `SIZE_MAX`; C23 adds the
/// `_WIDTH`s). The macros give such a parameter name a trailing `_`.
pub fn is_reserved(name: &str) -> bool {
    let mut chars = name.chars();
    let implementation = chars.next() == Some('_')
        && chars
            .next()
            .is_some_and(|c| c == '_' || c.is_ascii_uppercase());
    let limit = ["_MAX", "_MIN", "_WIDTH"]
        .iter()
        .find_map(|suffix| name.strip_suffix(suffix))
        .is_some_and(|stem| {
            stem.starts_with("INT")
                || stem.starts_with("UINT")
                || ["SIZE", "PTRDIFF", "SIG_ATOMIC", "WCHAR", "WINT"].contains(&stem)
        });
    implementation || limit || RESERVED_WORDS.contains(&name)
}
