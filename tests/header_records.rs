//! The declaration records the macros write are the records
//! `callgate-header` reads: callbacks and an error API compiled into this
//! test binary are read back from the binary's own file, and each one's
//! ELF note holds, byte for byte, what `Declaration::to_record` writes.

use std::ffi::{CStr, c_void};

use callgate::c_callback;
use callgate_header::{Declaration, Kind, extract, format};

#[test]
fn writer_and_reader_share_one_format() {
    assert!(
        include_str!("../macros/src/format.rs") == include_str!("../header/src/format.rs"),
        "macros/src/format.rs (the writer's) and header/src/format.rs (the reader's) differ: \
         the two copies of the record format must stay identical"
    );
}

/// A value C builds.
#[derive(Clone, Copy, callgate::CValue)]
#[repr(C)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// A handle C only holds.
#[repr(C)]
pub struct Session {
    pub id: u32,
}

/// A doc line.
///
/// A second paragraph, with a `*/` in it.
#[c_callback(on_error = -1)]
fn header_records_callback(text: &str, out: Option<&mut u64>) -> Result<i32, String> {
    if let Some(out) = out {
        *out = text.len() as u64;
    }
    Ok(0)
}

/// Takes a struct by value and a handle behind a pointer.
#[c_callback(on_error = 0.0)]
fn header_records_types(at: Point, session: Option<&mut Session>, name: &CStr) -> f64 {
    let _ = (session, name);
    at.x + at.y
}

#[c_callback(local)]
fn header_records_local(_: *const c_void) {}

/// Counts into the caller's state.
#[c_callback(local)]
fn header_records_counting(value: i32, #[user_data] state: &mut i64) {
    *state += i64::from(value);
}

callgate::export_table! {
    /// The local callbacks.
    pub static header_records_table: HeaderRecordsTable {
        header_records_local,
        header_records_counting,
    }
}

#[c_callback(export = "header_records_renamed", on_error = 0)]
fn header_records_rust_name(value: u8) -> u8 {
    value
}

#[c_callback]
#[cfg(any())]
fn header_records_compiled_out() {}

callgate::export_error_api!(header_records);

/// This test binary's declarations, the ones of this file.
fn declarations() -> (Vec<u8>, Vec<Declaration>) {
    // Referenced so that the `local` callbacks and the table are compiled in.
    let _ = header_records_local as extern "C" fn(*const c_void);
    let _ = &header_records_table;
    let exe = std::env::current_exe().expect("the test binary's path");
    let bytes = std::fs::read(&exe).expect("read the test binary");
    let declarations = extract(&bytes)
        .expect("the test binary's records are readable")
        .into_iter()
        .filter(|declaration| declaration.name().starts_with("header_records_"))
        .collect();
    (bytes, declarations)
}

fn find<'a>(declarations: &'a [Declaration], name: &str) -> &'a Declaration {
    declarations
        .iter()
        .find(|declaration| declaration.name() == name)
        .unwrap_or_else(|| panic!("no record for {name} in {declarations:#?}"))
}

#[test]
fn reads_the_records_the_macros_write() {
    let (_, found) = declarations();
    let names: Vec<&str> = found.iter().map(Declaration::name).collect();
    assert_eq!(
        names,
        [
            "header_records_callback",
            "header_records_clear_last_error",
            "header_records_counting",
            "header_records_last_error_length",
            "header_records_last_error_message",
            "header_records_local",
            "header_records_renamed",
            "header_records_table",
            "header_records_types",
        ]
    );

    let callback = find(&found, "header_records_callback");
    assert_eq!(callback.kind(), Kind::Export);
    assert_eq!(
        callback.prototype().as_deref(),
        Some("int32_t header_records_callback(const char *text, uint64_t *out)")
    );
    assert_eq!(
        callback.docs(),
        "A doc line.\n\nA second paragraph, with a `*/` in it."
    );
    assert!(callback.rust_types().is_empty());

    let types = find(&found, "header_records_types");
    assert_eq!(
        types.prototype().as_deref(),
        Some("double header_records_types(Point at, Session *session, const char *name)")
    );
    let rust_types: Vec<(&str, bool)> = types
        .rust_types()
        .iter()
        .map(|ty| (ty.name(), ty.by_value()))
        .collect();
    assert_eq!(rust_types, [("Point", true), ("Session", false)]);

    let local = find(&found, "header_records_local");
    assert_eq!(local.kind(), Kind::LocalCallback);
    assert_eq!(local.prototype(), None);
    assert_eq!(
        local.pointer_typedef(),
        "typedef void (*header_records_local_fn)(const void *)"
    );
    assert_eq!(local.docs(), "");

    let counting = find(&found, "header_records_counting");
    assert_eq!(
        counting.pointer_typedef(),
        "typedef void (*header_records_counting_fn)(int32_t value, void *state)"
    );
    let table = find(&found, "header_records_table");
    assert_eq!(table.kind(), Kind::Table);
    assert_eq!(
        table.table_fields(),
        ["header_records_local", "header_records_counting"]
    );
    assert_eq!(
        table.prototype().as_deref(),
        Some("extern const HeaderRecordsTable header_records_table")
    );
    assert_eq!(table.docs(), "The local callbacks.");

    assert_eq!(
        find(&found, "header_records_renamed")
            .prototype()
            .as_deref(),
        Some("uint8_t header_records_renamed(uint8_t value)")
    );

    assert_eq!(
        find(&found, "header_records_last_error_message")
            .prototype()
            .as_deref(),
        Some("int header_records_last_error_message(char *buf, size_t len)")
    );
    assert_eq!(
        find(&found, "header_records_last_error_length")
            .prototype()
            .as_deref(),
        Some("size_t header_records_last_error_length(void)")
    );
    let clear = find(&found, "header_records_clear_last_error");
    assert_eq!(
        clear.prototype().as_deref(),
        Some("void header_records_clear_last_error(void)")
    );
    assert_eq!(
        clear.docs(),
        "Clears the calling thread's last error message."
    );
}

/// The ELF note `format` describes, holding `record`.
fn note(record: &[u8]) -> Vec<u8> {
    let padded = |bytes: &mut Vec<u8>| bytes.resize(bytes.len().div_ceil(4) * 4, 0);
    let mut owner = format::NOTE_OWNER.as_bytes().to_vec();
    owner.push(0);
    let owner_size = u32::try_from(owner.len()).expect("a short owner");
    padded(&mut owner);
    let mut desc = record.to_vec();
    padded(&mut desc);
    let desc_size = u32::try_from(desc.len()).expect("a short record");
    let mut note = Vec::new();
    note.extend(owner_size.to_ne_bytes());
    note.extend(desc_size.to_ne_bytes());
    note.extend(format::NOTE_TYPE.to_ne_bytes());
    note.extend(owner);
    note.extend(desc);
    note
}

#[test]
fn each_note_holds_the_record_byte_for_byte() {
    let (bytes, found) = declarations();
    assert_eq!(found.len(), 9, "{found:#?}");
    for declaration in &found {
        let note = note(&declaration.to_record());
        assert!(
            bytes.windows(note.len()).any(|window| window == note),
            "the test binary holds no note with exactly the record of {}:\n{:?}",
            declaration.name(),
            String::from_utf8_lossy(&declaration.to_record())
        );
    }
}
