//! The declaration records the macros write are the records
//! `callgate-header` reads: callbacks and an error API compiled into this
//! test binary are read back from the binary's own file, and each one's
//! ELF note holds, byte for byte, what `Declaration::to_record` writes;
//! so do the records of the derives, their discriminants and array lengths
//! evaluated by the compiler. Callbacks with C and C++ keywords for names
//! give a header that compiles as C11, C2x and C++20.

use std::ffi::{CStr, c_int, c_void};
use std::marker::PhantomData;
use std::path::Path;
use std::process::Command;

use callgate::c_callback;
use callgate_header::{Declaration, HeaderOptions, Kind, extract, format, render};

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

/// How to draw.
#[derive(Clone, Copy, callgate::CEnum)]
#[repr(u8)]
pub enum HeaderRecordsMode {
    /// The default.
    Fast,
    Slow = 4,
    #[callgate(rename = "HEADER_RECORDS_CAREFUL")]
    Thorough = 1 << 4,
}

/// A value of `u64` beyond `int`.
#[derive(Clone, Copy, callgate::CEnum)]
#[repr(u64)]
#[callgate(prefix = "HR_BIG_")]
pub enum HeaderRecordsBig {
    Huge = u64::MAX,
    Small = 1,
}

const ROWS: usize = 2;

/// A box of cells.
#[derive(Clone, Copy, callgate::CValue)]
#[repr(C)]
pub struct HeaderRecordsBox {
    /// Its corner.
    pub corner: Point,
    pub size: HeaderRecordsMeters,
    pub cells: [[u8; 3]; ROWS],
    pub next: *const HeaderRecordsBox,
    pub done: Option<extern "C" fn(class: i32)>,
    pub unit: PhantomData<u8>,
}

/// A length.
#[derive(Clone, Copy, callgate::CValue)]
#[repr(transparent)]
pub struct HeaderRecordsMeters(pub f64);

/// Orders two points through `qsort_r`, by `axis`.
#[c_callback(local, on_panic = 0)]
fn header_records_compare(#[void] a: &Point, #[void] b: &Point, #[user_data] axis: &u8) -> c_int {
    let (a, b) = if *axis == 0 { (a.x, b.x) } else { (a.y, b.y) };
    a.total_cmp(&b) as c_int
}

/// Takes the derived types by value.
#[c_callback(on_error = 0.0)]
fn header_records_area(shape: HeaderRecordsBox, mode: HeaderRecordsMode) -> f64 {
    let _ = mode;
    shape.size.0 * shape.size.0
}

/// This test binary's declarations, the ones of this file.
fn declarations() -> (Vec<u8>, Vec<Declaration>) {
    // Referenced so that the `local` callbacks and the table are compiled in.
    let _ = header_records_local as extern "C" fn(*const c_void);
    let _ = header_records_compare
        as unsafe extern "C" fn(*const c_void, *const c_void, *mut c_void) -> c_int;
    let _ = &header_records_table;
    let exe = std::env::current_exe().expect("the test binary's path");
    let bytes = std::fs::read(&exe).expect("read the test binary");
    let declarations = extract(&bytes)
        .expect("the test binary's records are readable")
        .into_iter()
        .filter(|declaration| {
            let name = declaration.name();
            name.starts_with("header_records_") || name.starts_with("HeaderRecords")
        })
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
            "HeaderRecordsBig",
            "HeaderRecordsBox",
            "HeaderRecordsMeters",
            "HeaderRecordsMode",
            "header_records_area",
            "header_records_callback",
            "header_records_clear_last_error",
            "header_records_compare",
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

#[test]
fn reads_the_records_the_derives_write() {
    let (_, found) = declarations();
    let mode = find(&found, "HeaderRecordsMode");
    assert_eq!(mode.kind(), Kind::Enum);
    assert_eq!(mode.enum_repr(), Some("uint8_t"));
    assert_eq!(mode.docs(), "How to draw.");
    let constants: Vec<(&str, &str, &str)> = mode
        .members()
        .iter()
        .map(|member| (member.declaration, member.value, member.docs))
        .collect();
    assert_eq!(
        constants,
        [
            ("HEADER_RECORDS_MODE_FAST", "0", "The default."),
            ("HEADER_RECORDS_MODE_SLOW", "4", ""),
            ("HEADER_RECORDS_CAREFUL", "16", ""),
        ]
    );
    let big = find(&found, "HeaderRecordsBig");
    let constants: Vec<(&str, &str)> = big
        .members()
        .iter()
        .map(|member| (member.declaration, member.value))
        .collect();
    assert_eq!(
        constants,
        [
            ("HR_BIG_HUGE", "18446744073709551615"),
            ("HR_BIG_SMALL", "1")
        ]
    );

    let shape = find(&found, "HeaderRecordsBox");
    assert_eq!(shape.kind(), Kind::Struct);
    let fields: Vec<(&str, &str)> = shape
        .members()
        .iter()
        .map(|member| (member.declaration, member.docs))
        .collect();
    assert_eq!(
        fields,
        [
            ("Point corner", "Its corner."),
            ("HeaderRecordsMeters size", ""),
            ("uint8_t cells[2][3]", ""),
            ("const HeaderRecordsBox *next", ""),
            ("void (*done)(int32_t class_)", ""),
        ]
    );
    let uses: Vec<(&str, bool)> = shape
        .rust_types()
        .iter()
        .map(|ty| (ty.name(), ty.by_value()))
        .collect();
    assert_eq!(
        uses,
        [
            ("HeaderRecordsBox", false),
            ("HeaderRecordsMeters", true),
            ("Point", true)
        ]
    );
    let meters = find(&found, "HeaderRecordsMeters");
    assert_eq!(meters.kind(), Kind::Typedef);
    assert_eq!(
        meters.pointer_typedef(),
        "typedef double HeaderRecordsMeters;\n"
    );

    let compare = find(&found, "header_records_compare");
    assert_eq!(
        compare.pointer_typedef(),
        "typedef int (*header_records_compare_fn)(const void *a, const void *b, void *axis)"
    );
    assert!(compare.rust_types().is_empty());
}

#[test]
fn the_derived_types_compile_as_c_and_cpp() {
    let (bytes, mut found) = declarations();
    let point = extract(&bytes).expect("the test binary's records are readable");
    found.extend(
        point
            .into_iter()
            .filter(|declaration| declaration.name() == "Point"),
    );
    let header = render(&found, &HeaderOptions::new("RECORDS_H")).expect("a header");
    assert!(
        header.contains("typedef double HeaderRecordsMeters;\n"),
        "{header}"
    );
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("header-records-types");
    std::fs::create_dir_all(&dir).expect("create the test directory");
    std::fs::write(dir.join("records.h"), &header).expect("write the header");
    let source = dir.join("records.c");
    // The layout C sees is Rust's.
    let layout = format!(
        "#include <assert.h>\n#include <stddef.h>\n#include \"records.h\"\n\
         static_assert(sizeof(HeaderRecordsMode) == 1, \"a byte\");\n\
         static_assert(HEADER_RECORDS_CAREFUL == 16, \"evaluated\");\n\
         static_assert(sizeof(HeaderRecordsBox) == {}, \"size\");\n\
         static_assert(offsetof(HeaderRecordsBox, cells) == {}, \"cells\");\n\
         static_assert(offsetof(HeaderRecordsBox, done) == {}, \"done\");\n",
        size_of::<HeaderRecordsBox>(),
        std::mem::offset_of!(HeaderRecordsBox, cells),
        std::mem::offset_of!(HeaderRecordsBox, done),
    );
    std::fs::write(&source, layout).expect("write the C file");
    let c = [
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-fsyntax-only",
    ];
    let cpp = [
        "-x",
        "c++",
        "-std=c++17",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-fsyntax-only",
    ];
    for (compiler, flags) in [("cc", &c[..]), ("c++", &cpp[..])] {
        let output = Command::new(compiler)
            .args(flags)
            .arg(&source)
            .output()
            .unwrap_or_else(|error| panic!("cannot run `{compiler}`: {error}"));
        assert!(
            output.status.success(),
            "`{compiler}` rejects the header:\n{}\n--- header\n{header}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
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
    assert_eq!(found.len(), 15, "{found:#?}");
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

/// Callbacks whose names C and C++ cannot use as written.
#[allow(non_snake_case, unused_variables, clippy::too_many_arguments)]
mod keyword_names {
    use callgate::c_callback;

    /// An exported callback `$name` with an `i32` parameter named after each
    /// `$param`.
    macro_rules! named_params {
        ($name:ident: $($param:ident)*) => {
            #[c_callback]
            fn $name($($param: i32),*) {}
        };
    }

    // C11 6.4.1.
    named_params! { keywords_c11:
        auto r#break case char r#const r#continue default r#do double r#else r#enum r#extern float
        r#for goto r#if inline int long register restrict r#return short signed sizeof r#static
        r#struct switch typedef union unsigned void volatile r#while _Alignas _Alignof _Atomic _Bool
        _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    }

    // What C23 6.4.1 adds.
    named_params! { keywords_c23:
        alignas alignof bool constexpr r#false nullptr static_assert thread_local r#true r#typeof
        typeof_unqual _BitInt _Decimal32 _Decimal64 _Decimal128
    }

    // What C++20 [lex.key] adds, its alternative representations, and the
    // identifiers with a special meaning ([lex.name]), which stay as they are.
    named_params! { keywords_cpp20:
        asm catch char8_t char16_t char32_t class concept consteval constinit const_cast co_await
        co_return co_yield decltype delete dynamic_cast explicit export friend mutable namespace new
        noexcept operator private protected public reinterpret_cast requires static_cast template
        this throw r#try typeid typename using r#virtual wchar_t
        and and_eq bitand bitor compl not not_eq or or_eq xor xor_eq
        r#final r#override import module
    }

    /// Keywords in a function pointer's parameter list; macros and types of
    /// the header's includes as names.
    #[c_callback]
    fn keywords_header_names(
        callback: Option<extern "C" fn(_Bool: i32, class: i32) -> i32>,
        NULL: i32,
        INT8_MAX: i32,
        size_t: usize,
        Session: Option<&super::Session>,
        bytes: &[u8],
        other: Option<&super::Session>,
    ) {
    }

    #[c_callback]
    fn double(value: &mut f64) {
        *value *= 2.0;
    }

    #[c_callback(export = "class")]
    fn exported_as_class() {}

    /// A table and its field named after keywords (in a module of their
    /// own: a static cannot share a name with the parameters above).
    pub mod table {
        use callgate::c_callback;

        #[c_callback(local)]
        fn and() {}

        callgate::export_table! {
            pub static xor: KeywordsTable { and }
        }
    }
}

#[test]
fn keyword_names_compile_as_c_and_cpp() {
    // Referenced so that the table is compiled in.
    let _ = &keyword_names::table::xor;
    let exe = std::env::current_exe().expect("the test binary's path");
    let bytes = std::fs::read(&exe).expect("read the test binary");
    let declarations: Vec<Declaration> = extract(&bytes)
        .expect("the test binary's records are readable")
        .into_iter()
        .filter(|declaration| {
            let name = declaration.name();
            name.starts_with("keywords_") || ["double", "class", "and", "xor"].contains(&name)
        })
        .collect();
    assert_eq!(declarations.len(), 8, "{declarations:#?}");
    let header = render(&declarations, &HeaderOptions::new("KEYWORDS_H")).expect("a header");

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("header-keywords");
    std::fs::create_dir_all(&dir).expect("create the test directory");
    std::fs::write(dir.join("keywords.h"), &header).expect("write the header");
    let source = dir.join("keywords.c");
    std::fs::write(&source, "#include \"keywords.h\"\n").expect("write the C file");
    let c = ["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only"];
    let cpp = ["-x", "c++", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"];
    for (compiler, standard, flags) in [
        ("cc", "-std=c11", &c[..]),
        ("cc", "-std=c2x", &c[..]),
        ("cc", "-std=gnu11", &c[..]),
        ("c++", "-std=c++20", &cpp[..]),
        ("c++", "-std=gnu++20", &cpp[..]),
    ] {
        let output = Command::new(compiler)
            .arg(standard)
            .args(flags)
            .arg(&source)
            .output()
            .unwrap_or_else(|error| panic!("cannot run `{compiler}`: {error}"));
        assert!(
            output.status.success(),
            "`{compiler} {standard}` rejects the header:\n{}\n--- header\n{header}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    for name in ["double", "class", "xor"] {
        let comment = format!("/* C and C++ cannot declare `{name}` by its name");
        assert!(header.contains(&comment), "no `{comment}`:\n{header}");
    }
}
