//! The C header `callgate-header` generates from a built `cdylib`, the
//! fixture (`tests/fixture`): it declares every callback the library
//! exports, and a C program and a C++ program that include it compile with
//! warnings as errors, link against the library and run.
//!
//! The fixture is built on first use (`host::fixture`).

mod install;

use crate::host;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use callgate_header::{Declaration, HeaderOptions, Kind, extract, render};

/// What C needs to know about the fixture's types that the library does
/// not define: `Reenter` is a type alias (a function pointer). The header
/// defines the others: `Pair`, a `#[repr(C)]` struct the program builds,
/// and `Turn` and `Tier`, enums C passes as the integers of their reprs.
const PRELUDE: &str = "\
typedef int64_t (*Reenter)(int32_t depth);
";

fn declarations() -> Vec<Declaration> {
    let library = host::fixture();
    let bytes = std::fs::read(&library)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", library.display()));
    let declarations = extract(&bytes).expect("the fixture's declarations are readable");
    assert!(
        !declarations.is_empty(),
        "no declarations recorded in {}",
        library.display()
    );
    declarations
}

fn options() -> HeaderOptions {
    HeaderOptions::new("FIXTURE_H")
        .with_prelude(PRELUDE)
        .with_defined_type("Reenter")
}

/// Writes the generated header into a fresh directory and returns it.
fn header_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("create the test directory");
    std::fs::write(
        dir.join("fixture.h"),
        render(&declarations(), &options()).expect("a header"),
    )
    .expect("write the header");
    dir
}

#[test]
fn header_has_guards_and_a_stable_order() {
    let declarations = declarations();
    let header = render(&declarations, &options()).expect("a header");
    for line in [
        "#ifndef FIXTURE_H",
        "#include <stdint.h>",
        "#define FIXTURE_API __declspec(dllimport)",
        "#define FIXTURE_CALL __cdecl",
        "typedef int64_t (*Reenter)(int32_t depth);",
        "typedef struct Pair {",
        "    int64_t a;",
        "} Pair;",
        "typedef int32_t Turn;",
        "    TURN_BACK = -180,",
        "    TURN_AROUND = 270",
        "typedef uint8_t Tier;",
        "FIXTURE_API int32_t FIXTURE_CALL fixture_turn_index(Turn turn);",
        "extern \"C\" {",
        "FIXTURE_API size_t FIXTURE_CALL fixture_last_error_length(void);",
        "FIXTURE_API int FIXTURE_CALL fixture_last_error_message(char *buf, size_t len);",
        "FIXTURE_API int32_t FIXTURE_CALL fixture_plain(int32_t value);",
        "typedef int32_t (FIXTURE_CALL *fixture_plain_fn)(int32_t value);",
        "FIXTURE_API int64_t FIXTURE_CALL fixture_str_chars(const char *text);",
        "FIXTURE_API int64_t FIXTURE_CALL fixture_nest(int32_t depth, Reenter reenter);",
        "typedef int (FIXTURE_CALL *fixture_compare_counted_fn)(const void *a, const void *b, void *counter);",
        "typedef struct FixtureCallbacks {",
        "    fixture_compare_counted_fn fixture_compare_counted;",
        "} FixtureCallbacks;",
        "FIXTURE_API extern const FixtureCallbacks fixture_callbacks;",
        "#endif /* FIXTURE_H */",
    ] {
        assert!(
            header.lines().any(|l| l == line),
            "the header lacks `{line}`:\n{header}"
        );
    }
    // Defined by the prelude or by the header: not forward-declared.
    for defined in ["Reenter", "Turn", "Tier", "Pair"] {
        assert!(
            !header.contains(&format!("typedef struct {defined} {defined};")),
            "{defined} is forward-declared:\n{header}"
        );
    }
    // Sorted by name, and the same whatever order the records come in.
    let names: Vec<&str> = declarations.iter().map(Declaration::name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    let mut shuffled = declarations.clone();
    shuffled.reverse();
    assert_eq!(render(&shuffled, &options()), Ok(header));
}

#[test]
fn header_declares_every_exported_callback() {
    let library = host::fixture();
    let exported = dynamic_functions(&library);
    let declared: BTreeSet<String> = declarations()
        .iter()
        .filter(|declaration| declaration.kind() == Kind::Export)
        .map(|declaration| declaration.name().to_owned())
        .collect();
    let by_hand = hand_exported(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixture/src"));

    let missing: Vec<&String> = exported
        .iter()
        .filter(|name| !declared.contains(*name) && !by_hand.contains(*name))
        .collect();
    assert!(
        missing.is_empty(),
        "{} exports callbacks the header does not declare: {missing:?}",
        library.display()
    );
    let phantom: Vec<&String> = declared
        .iter()
        .filter(|name| !exported.contains(*name))
        .collect();
    assert!(
        phantom.is_empty(),
        "the header declares functions {} does not export: {phantom:?}",
        library.display()
    );
}

#[test]
fn c_program_compiles_links_and_runs() {
    let dir = header_dir("header-c");
    let program = write_program(&dir, "program.c");
    let binary = dir.join("program");
    compile(
        Command::new("cc").args(["-std=c99", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]),
        &dir,
        &program,
        &binary,
    );
    run(&binary);
}

#[test]
fn cpp_program_compiles_links_and_runs() {
    if Command::new("c++").arg("--version").output().is_err() {
        eprintln!("no C++ compiler (`c++`): skipped");
        return;
    }
    let dir = header_dir("header-cpp");
    let program = write_program(&dir, "program.c");
    let binary = dir.join("program");
    compile(
        Command::new("c++").args(["-x", "c++", "-std=c++11", "-Wall", "-Wextra", "-Werror"]),
        &dir,
        &program,
        &binary,
    );
    run(&binary);
}

/// The C program: calls a few callbacks through the header's prototypes,
/// reads errors through the error API, and references every declared
/// function and its pointer type, so the link fails if one is not exported
/// and the compile fails if a `name_fn` does not match its prototype.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <string.h>
#include "fixture.h"

static int failures = 0;

#define CHECK(condition)                                                   \
    do {                                                                   \
        if (!(condition)) {                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,         \
                    __LINE__, #condition);                                 \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static int64_t reenter(int32_t depth) {
    return fixture_nest(depth, reenter);
}

static void check_last_error(const char *expected) {
    char message[256];
    size_t length = fixture_last_error_length();
    int written = fixture_last_error_message(message, sizeof message);
    CHECK(length == strlen(expected) + 1);
    CHECK(written == (int)strlen(expected));
    CHECK(strcmp(message, expected) == 0);
    if (strcmp(message, expected) != 0) {
        fprintf(stderr, "last error: \"%s\", expected \"%s\"\n", message, expected);
    }
}

static int every_function_and_type(void);

int main(void) {
    struct Pair pair;
    fixture_plain_fn plain = fixture_plain;

    CHECK(fixture_plain(41) == 42);
    CHECK(plain(1) == 2);
    CHECK(fixture_str_chars("h\xc3\xa9llo") == 5);

    pair.a = 40;
    pair.b = 2;
    CHECK(fixture_pair_sum(&pair) == 42);
    CHECK(fixture_pair_swap(pair).b == 42);
    CHECK(fixture_turn_index(TURN_RIGHT) == 4);
    CHECK(fixture_tier_index(2, TIER_GOLD) == 23);
    CHECK(fixture_nest(3, reenter) == -1);

    fixture_clear_last_error();
    CHECK(fixture_last_error_length() == 0);
    CHECK(fixture_fail(7) == -1);
    check_last_error("asked to fail with 7");
    CHECK(fixture_cstr_len(NULL) == -1);
    check_last_error("argument `text` is NULL");

    CHECK(every_function_and_type() > 0);
    if (failures != 0) {
        return 1;
    }
    printf("result=ok\n");
    return 0;
}
"#;

/// `PROGRAM` plus `every_function_and_type`, generated from the
/// declarations.
fn write_program(dir: &Path, name: &str) -> PathBuf {
    let mut source = PROGRAM.to_owned();
    source.push_str("\nstatic int every_function_and_type(void) {\n");
    source.push_str("    static void (*const every_function[])(void) = {\n");
    let exported: Vec<Declaration> = declarations()
        .into_iter()
        .filter(|declaration| declaration.kind() == Kind::Export)
        .collect();
    for declaration in &exported {
        source.push_str(&format!(
            "        (void (*)(void)){},\n",
            declaration.name()
        ));
    }
    source.push_str("    };\n");
    for (index, declaration) in exported.iter().enumerate() {
        let (name, pointer) = (declaration.name(), declaration.pointer_type_name());
        source.push_str(&format!(
            "    {pointer} pointer_{index} = {name};\n    (void)pointer_{index};\n"
        ));
    }
    source.push_str("    return (int)(sizeof every_function / sizeof every_function[0]);\n}\n");
    let path = dir.join(name);
    std::fs::write(&path, source).expect("write the C program");
    path
}

fn compile(compiler: &mut Command, include: &Path, source: &Path, binary: &Path) {
    let library = host::fixture();
    let library_dir = library.parent().expect("the fixture's directory");
    let output = compiler
        .arg("-I")
        .arg(include)
        .arg(source)
        .arg("-o")
        .arg(binary)
        .arg("-L")
        .arg(library_dir)
        .arg("-lcallgate_fixture")
        .arg(host::rpath(library_dir))
        .output()
        .unwrap_or_else(|error| panic!("cannot run {compiler:?}: {error}"));
    assert!(
        output.status.success(),
        "{compiler:?} failed:\n{}\n--- header\n{}",
        String::from_utf8_lossy(&output.stderr),
        std::fs::read_to_string(include.join("fixture.h")).unwrap_or_default()
    );
}

fn run(binary: &Path) {
    let outcome = host::run(
        Command::new(binary)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("CALLGATE")
            .env_remove("FIXTURE_INIT"),
        std::time::Duration::from_secs(60),
    );
    outcome.assert_ok();
}

/// The functions `library` exports: its defined dynamic symbols of type `T`.
fn dynamic_functions(library: &Path) -> BTreeSet<String> {
    let output = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library)
        .output()
        .unwrap_or_else(|error| panic!("cannot run `nm` (binutils) on the fixture: {error}"));
    assert!(
        output.status.success(),
        "nm failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let functions: BTreeSet<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().rev();
            let name = fields.next()?;
            let kind = fields.next()?;
            (kind == "T").then(|| name.to_owned())
        })
        .collect();
    assert!(
        !functions.is_empty(),
        "{} exports no functions",
        library.display()
    );
    functions
}

/// The symbols the fixture exports by hand — plain `extern "C"` fns under
/// `#[unsafe(no_mangle)]` or `export_name`, which are not callbacks.
fn hand_exported(source_dir: &Path) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let entries = std::fs::read_dir(source_dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", source_dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            names.extend(hand_exported(&path));
            continue;
        }
        if path.extension().is_none_or(|ext| ext != "rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("read the fixture's source");
        let mut after_no_mangle = false;
        for line in source.lines() {
            if let Some(rest) = line.split("export_name = \"").nth(1) {
                names.extend(rest.split('"').next().map(str::to_owned));
            } else if line.contains("no_mangle") {
                after_no_mangle = true;
            } else if let Some(rest) = line.split(" fn ").nth(1).filter(|_| after_no_mangle) {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                names.insert(name);
                after_no_mangle = false;
            }
        }
    }
    names
}
