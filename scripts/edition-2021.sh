#!/usr/bin/env bash
# Builds the test fixture's sources as a package of edition 2021 (the
# workspace is 2024) in DIR, release, with the workspace's Cargo.lock: the
# attributes' code as most crates that use callgate compile it (the
# editions drop an `if let`'s and a block's tail temporaries at different
# points). The library is DIR/target/release/libcallgate_fixture.so.
#
#   scripts/edition-2021.sh DIR
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${1:?usage: scripts/edition-2021.sh DIR}
mkdir -p "$dir"
cat >"$dir/Cargo.toml" <<MANIFEST
[package]
name = "callgate-fixture"
version = "0.0.0"
edition = "2021"
publish = false

[lib]
path = "$PWD/tests/fixture/src/lib.rs"
crate-type = ["cdylib"]

[dependencies]
callgate = { path = "$PWD/runtime" }

[workspace]
MANIFEST
cp Cargo.lock "$dir/Cargo.lock"
cargo build --release --quiet --manifest-path "$dir/Cargo.toml" --target-dir "$dir/target"
