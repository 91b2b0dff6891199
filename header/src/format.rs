//! The declaration record format: what `#[c_callback]` and
//! `export_error_api!` write into a library, and what `callgate-header`
//! reads back.
//!
//! A library holds each declaration as one record, the descriptor of an ELF
//! note of owner [`NOTE_OWNER`] and type [`NOTE_TYPE`], in a
//! [`NOTE_SECTION`] section on ELF targets (a plain `#[used]` static
//! elsewhere). The record is NUL-terminated fields between two markers:
//!
//! ```text
//! \0callgate-decl\0 VERSION\0 KIND\0 NAME\0 SIGNATURE\0 TYPES\0 DOCS\0 callgate-end\0
//! ```
//!
//! - `VERSION`: [`VERSION`] in decimal;
//! - `KIND`: [`EXPORT`], [`LOCAL`] or [`TABLE`];
//! - `NAME`: the exported symbol, or the `local` callback's name;
//! - `SIGNATURE`: the C declaration with [`NAME_SLOT`] where the name goes,
//!   e.g. `int32_t @(const char *text)`; for a [`TABLE`], the struct type's
//!   name and then its fields, separated by [`TYPE_SEPARATOR`];
//! - `TYPES`: the types defined in Rust that the signature names, sorted by
//!   name and separated by [`TYPE_SEPARATOR`], each prefixed with
//!   [`BEHIND_POINTER`] when C only sees it behind pointers;
//! - `DOCS`: the doc comment's lines, joined by `\n`.
//!
//! No field contains a NUL. A reader meeting another `VERSION` reports it
//! rather than guessing.
//!
//! The writer (the `callgate-macros` crate) and the reader (the
//! `callgate-header` crate) each hold this file, byte for byte the same; a
//! test of their workspace compares the two copies.

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
pub const VERSION: u32 = 1;

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
/// callback's function-pointer type; `TYPES` is empty.
pub const TABLE: &str = "table";

/// Stands for the declarator in `SIGNATURE`: the header writes the name
/// there for the prototype, `(*name_fn)` for the function-pointer typedef.
pub const NAME_SLOT: &str = "@";

/// Separates the names in `TYPES`.
pub const TYPE_SEPARATOR: char = ' ';

/// Marks a name in `TYPES` that C only sees behind pointers.
pub const BEHIND_POINTER: char = '*';
