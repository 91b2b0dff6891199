//! The committed `include/plugin.h` is exactly what `callgate-header`
//! generates from the built plugin — so it changes only on purpose — and it
//! declares every function the plugin exports. After changing a callback,
//! rewrite it with `CALLGATE_BLESS=1 cargo test -p callgate-example-plugin`.

use std::collections::BTreeSet;
use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
use std::path::{Path, PathBuf};
use std::process::Command;

use callgate_header::{Declaration, HeaderOptions, Kind, extract, render};

/// The plugin cargo built for this test: in `deps/`, beside the test binary.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    let library = deps.join(format!("{DLL_PREFIX}callgate_example_plugin{DLL_SUFFIX}"));
    assert!(library.exists(), "{} is missing", library.display());
    library
}

fn declarations() -> Vec<Declaration> {
    let bytes = std::fs::read(library()).expect("read the plugin library");
    extract(&bytes).expect("the plugin's declarations are readable")
}

fn committed_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include/plugin.h")
}

#[test]
fn committed_header_is_up_to_date() {
    let header = render(&declarations(), &HeaderOptions::new("PLUGIN_H")).expect("a header");
    let path = committed_path();
    if std::env::var_os("CALLGATE_BLESS").is_some() {
        std::fs::write(&path, &header).expect("write the header");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == header,
        "{} is out of date; if the change is intended, rerun with CALLGATE_BLESS=1\n\
         --- generated now ---\n{header}",
        path.display()
    );
}

#[test]
fn header_declares_every_exported_function() {
    let library = library();
    let output = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&library)
        .output()
        .unwrap_or_else(|error| panic!("cannot run `nm` (binutils): {error}"));
    assert!(output.status.success(), "nm failed");
    let exported: BTreeSet<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace().rev();
            let (name, kind) = (fields.next()?, fields.next()?);
            (kind == "T").then(|| name.to_owned())
        })
        .collect();
    let declared: BTreeSet<String> = declarations()
        .iter()
        .filter(|declaration| declaration.kind() == Kind::Export)
        .map(|declaration| declaration.name().to_owned())
        .collect();
    assert!(exported.contains("plugin_check"), "nm output: {exported:?}");
    assert_eq!(
        exported, declared,
        "exported (left) and declared (right) differ"
    );
}

#[test]
fn header_compiles_as_c_and_cpp() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-header");
    std::fs::create_dir_all(&dir).expect("create the test directory");
    let source = dir.join("include_only.c");
    std::fs::write(
        &source,
        "#include \"plugin.h\"\nint main(void) { return 0; }\n",
    )
    .expect("write the C file");
    let include = committed_path();
    let include = include.parent().expect("include/");
    let mut compilers = vec![("cc", vec!["-std=c99", "-Wpedantic"])];
    if Command::new("c++").arg("--version").output().is_ok() {
        compilers.push(("c++", vec!["-x", "c++", "-std=c++11"]));
    }
    for (compiler, flags) in compilers {
        let output = Command::new(compiler)
            .args(&flags)
            .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(include)
            .arg(&source)
            .output()
            .unwrap_or_else(|error| panic!("cannot run {compiler}: {error}"));
        assert!(
            output.status.success(),
            "{compiler} {flags:?} rejects plugin.h:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
