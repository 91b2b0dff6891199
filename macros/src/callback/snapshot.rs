//! The expansion snapshot: each `tests/expand/NAME.rs` of the workspace,
//! with its `#[c_callback]` and `#[callgate::init]` items and its
//! `#[derive(CValue)]` and `#[derive(CEnum)]` expanded and pretty-printed, must equal the committed `NAME.expanded.rs`. Run with
//! `CALLGATE_BLESS=1` to rewrite the snapshots after an intended change.

use std::fs;
use std::path::Path;

use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::{File, Item, Meta, Token};

#[test]
fn expansions_match_snapshots() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/expand");
    let bless = std::env::var_os("CALLGATE_BLESS").is_some();
    let mut checked = 0;
    for entry in fs::read_dir(&dir).expect("tests/expand exists") {
        let input = entry.expect("readable directory").path();
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".rs") || name.ends_with(".expanded.rs") {
            continue;
        }
        let expanded = expand_file(&fs::read_to_string(&input).unwrap());
        let snapshot = input.with_extension("expanded.rs");
        if bless {
            fs::write(&snapshot, &expanded).unwrap();
        } else {
            let committed = fs::read_to_string(&snapshot).unwrap_or_default();
            assert!(
                committed == expanded,
                "{} is out of date; if the change is intended, rerun with CALLGATE_BLESS=1\n\
                 --- expanded now ---\n{expanded}",
                snapshot.display()
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "no snapshot inputs in {}", dir.display());
}

/// The items `#[derive(CValue)]` and `#[derive(CEnum)]` add for `item`.
fn derives(item: &Item) -> Vec<Item> {
    let attrs = match item {
        Item::Struct(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        _ => return Vec::new(),
    };
    let mut derived = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("derive")) {
        let paths = attr
            .parse_args_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
            .expect("derive lists parse");
        for path in paths {
            let Some(last) = path.segments.last() else {
                continue;
            };
            let input = item.to_token_stream();
            let output = if last.ident == "CValue" {
                crate::derive::c_value(input)
            } else if last.ident == "CEnum" {
                crate::derive::c_enum(input)
            } else {
                continue;
            };
            let expanded: File = syn::parse2(output).expect("derive output parses");
            derived.extend(expanded.items);
        }
    }
    derived
}

/// Expands every top-level item carrying one of the attributes, and the
/// derives of the types C passes by value.
fn expand_file(source: &str) -> String {
    let file: File = syn::parse_str(source).expect("snapshot input parses");
    let mut items = Vec::new();
    for mut item in file.items {
        let Item::Fn(function) = &mut item else {
            let derived = derives(&item);
            items.push(item);
            items.extend(derived);
            continue;
        };
        let position = function.attrs.iter().position(|attr| {
            let path = attr.path();
            path.is_ident("c_callback") || path.segments.last().is_some_and(|s| s.ident == "init")
        });
        let Some(position) = position else {
            items.push(item);
            continue;
        };
        let attr = function.attrs.remove(position);
        let is_callback = attr.path().is_ident("c_callback");
        let args = match attr.meta {
            Meta::List(list) => list.tokens,
            _ => proc_macro2::TokenStream::new(),
        };
        let input = function.to_token_stream();
        let output = if is_callback {
            super::c_callback(args, input)
        } else {
            crate::init::init(args, input)
        };
        let expanded: File = syn::parse2(output).expect("expansion parses");
        items.extend(expanded.items);
    }
    let file = File { items, ..file };
    prettyplease::unparse(&file)
}
