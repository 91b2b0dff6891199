#!/usr/bin/env bash
# Runs callgate's whole test suite: unit, integration (real C callers),
# compile-fail, doc tests, the loom models, the sanitizer runs (when the
# nightly toolchain is there) and the valgrind checks.
#
#   scripts/test.sh          the CI-sized run
#   scripts/test.sh --full   the large iteration counts (CALLGATE_FULL=1)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--full" ]]; then
    export CALLGATE_FULL=1
fi

step() { printf '\n==> %s\n' "$*"; }

step "build the cdylib fixtures the dlopen tests load, debug and release"
cargo build --workspace --lib --quiet
cargo build --workspace --lib --release --quiet

step "unit, integration, compile-fail and doc tests (debug fixture)"
cargo test --workspace

# The C-host tests again, against the optimised fixture (and plugins built
# in release): what users ship, where the compiler drops landing pads the
# debug build keeps.
step "the C-host tests against the release fixture and release plugins"
CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev \
    --test abandon --test bad_input --test churn --test data --test depth --test dlclose \
    --test fork --test init_background --test signals --test teardown --test plugins \
    --test unwind

# The C-host tests once more with the fixture's TLS block in dynamic TLS
# (glibc's static TLS reserve for dlopen set to 0; each host checks where the
# block went), where the fast paths find the slot through the TLS
# descriptor: what a library loaded after others filled that reserve runs.
step "the C-host tests with the release fixture in dynamic TLS"
CALLGATE_TEST_DYNAMIC_TLS=1 CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev \
    --test abandon --test bad_input --test churn --test depth \
    --test fork --test init_background --test signals --test teardown

# The attributes' code as most crates that use callgate compile it: in a
# crate of edition 2021, not the workspace's 2024 (the editions drop an
# `if let`'s and a block's tail temporaries at different points). The
# fixture's own sources, built as a package of edition 2021 outside the
# workspace (with the workspace's Cargo.lock), and the C-host tests
# against that build.
step "the C-host tests against the fixture built as an edition 2021 crate (release)"
edition_dir=target/fixture-edition-2021
mkdir -p "$edition_dir"
cat > "$edition_dir/Cargo.toml" <<MANIFEST
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
cp Cargo.lock "$edition_dir/Cargo.lock"
cargo build --release --quiet --manifest-path "$edition_dir/Cargo.toml" \
    --target-dir "$edition_dir/target"
CALLGATE_TEST_FIXTURE="$PWD/$edition_dir/target/release/libcallgate_fixture.so" \
    CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev \
    --test abandon --test bad_input --test callbacks --test churn --test data --test depth \
    --test fork --test init_background --test signals --test teardown --test values

# The C-host and linked-program tests that the other builds of the
# fixture below run (all but the plugin hosts', which build their own).
builds_tests=(--test abandon --test bad_input --test callbacks --test churn --test data
    --test depth --test dlclose --test fork --test init_background --test signals
    --test teardown --test unwind --test values)

# The release profile production libraries often ship: fat LTO, one
# codegen unit. The runtime's code is then optimised together with the
# callbacks', across the crates, and its TLS block is smaller.
step "the C-host tests against the fixture built with fat LTO and one codegen unit"
CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 cargo build --quiet \
    -p callgate-fixture --release --target-dir target/fixture-lto
CALLGATE_TEST_FIXTURE="$PWD/target/fixture-lto/release/libcallgate_fixture.so" \
    CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev "${builds_tests[@]}"

# A C program that links the library statically: the fixture's sources
# built as a `staticlib` (release), linked into the programs of the linked
# tests, whose callbacks then live in the executable (its TLS, its init).
step "the linked programs' tests with the fixture linked in as a staticlib (release)"
cargo rustc --quiet -p callgate-fixture --release --target-dir target/fixture-staticlib \
    --crate-type staticlib
CALLGATE_TEST_STATICLIB="$PWD/target/fixture-staticlib/release/libcallgate_fixture.a" \
    CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev \
    --test callbacks --test data --test values

# The size-optimised release profiles (opt-level "s" and "z"), which
# inline less: the tests of unwinds out of C functions declared
# `extern "C"` accept the abort documented for these levels
# (`CALLGATE_FIXTURE_OPT_LEVEL`), those declared `extern "C-unwind"` get
# callgate's message as in every profile.
for level in s z; do
    step "the C-host tests against the fixture built at opt-level \"$level\""
    CARGO_PROFILE_RELEASE_OPT_LEVEL=$level cargo build --quiet -p callgate-fixture --release \
        --target-dir "target/fixture-opt-$level"
    CALLGATE_TEST_FIXTURE="$PWD/target/fixture-opt-$level/release/libcallgate_fixture.so" \
        CALLGATE_FIXTURE_OPT_LEVEL=$level CALLGATE_FIXTURE_PROFILE=release \
        cargo test -p callgate-dev "${builds_tests[@]}"
done

# A build without unwind tables (`panic = "abort"` and
# `-C force-unwind-tables=no`) still assembles: the runtime's `asm!` blocks
# carry no unwind directives of the function they are in (tls module docs).
step "the fixture built without unwind tables, and its panics"
RUSTFLAGS="-C force-unwind-tables=no -C panic=abort" cargo build --quiet -p callgate-fixture \
    --release --target x86_64-unknown-linux-gnu --target-dir target/no-unwind-tables
# With the abort panic strategy nothing catches a panic: the process aborts.
CALLGATE_TEST_FIXTURE="$PWD/target/no-unwind-tables/x86_64-unknown-linux-gnu/release/libcallgate_fixture.so" \
    CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test bad_input \
    a_panic_returns_the_fallback_or_with_the_abort_strategy_aborts

# The portable slot (a `thread_local!`), which targets other than x86-64
# glibc Linux and mingw-w64 Windows use, built here with its cfg: the
# unit tests and the C hosts against its optimised fixture.
step "the unit and C-host tests with the portable thread_local! slot (release)"
portable=(env RUSTFLAGS="--cfg callgate_portable_tls" CALLGATE_FIXTURE_PROFILE=release)
"${portable[@]}" cargo build --workspace --lib --release --quiet --target-dir target/portable-tls
"${portable[@]}" cargo test -p callgate --lib --release --target-dir target/portable-tls
"${portable[@]}" cargo test -p callgate-dev --release --target-dir target/portable-tls \
    --test abandon --test bad_input --test churn --test data --test depth --test dlclose \
    --test fork --test init_background --test signals --test teardown \
    --test fork_closure --test fork_closure_contended --test gate_fork_contended

# musl: the fixture built for it and the C hosts compiled with musl-gcc,
# run by the same tests (installs musl-tools and the Rust target if absent).
step "the C-host tests against a musl build of the fixture (debug and release)"
scripts/musl.sh "$@"

# aarch64 Linux (glibc): the fixture and the C hosts cross-built, the hosts
# run under qemu-user (installs the cross toolchain and qemu if absent).
step "the C-host tests against an aarch64 build, under qemu-user (debug and release)"
scripts/aarch64.sh "$@"

step "loom models of the gate and the free list"
RUSTFLAGS="--cfg callgate_loom" LOOM_MAX_PREEMPTIONS=3 \
    cargo test -p callgate --lib --release --target-dir target/loom

step "Miri over the runtime's unit tests (nightly)"
scripts/miri.sh

step "ThreadSanitizer and AddressSanitizer over the C hosts (nightly)"
scripts/sanitizers.sh

if [[ -x scripts/valgrind.sh ]]; then
    step "valgrind: memcheck and helgrind over the churn and nesting harness"
    scripts/valgrind.sh
fi
