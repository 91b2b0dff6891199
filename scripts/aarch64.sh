#!/usr/bin/env bash
# Runs the C-host tests against callgate built for aarch64 Linux (glibc):
# the fixture as an aarch64 cdylib (release) and the C hosts
# cross-compiled with aarch64-linux-gnu-gcc, run under qemu-user. The Rust
# test binaries that start the hosts and check what they print are the
# ordinary x86-64 ones; they are pointed at the aarch64 builds with
# CALLGATE_TEST_HOSTS (small scripts that start each host under
# qemu-aarch64), CALLGATE_TEST_FIXTURE, CALLGATE_TEST_EMULATOR and
# CALLGATE_TEST_TARGET (the plugin copies are cross-built too). Also: the
# runtime's unit tests under qemu-aarch64 (a debug build: its assertions),
# and the codegen guard on the release benchmark fixture (tests/codegen),
# which shares this script's release build of the runtime. The debug
# fixture's hosts are the x86-64 debug row's: under emulation they would
# double this row's time for code that is the same on both architectures.
#
#   scripts/aarch64.sh          the CI-sized run
#   scripts/aarch64.sh --full   the large iteration counts (CALLGATE_FULL=1)
#
# Needs the Rust target for the pinned toolchain, the cross compilers,
# aarch64 glibc and qemu-user (`cargo xtask test --list` says how to install
# them; it skips this run without them), and fails if anything cannot run.
#
# What emulation cannot show: qemu-user runs the aarch64 code with the x86-64
# host's stronger memory ordering, so an ordering that is too weak for
# aarch64 hardware passes here; loom models the orderings instead. qemu-user
# keeps memory for every thread that ever ran, so the churn host's RSS check
# is off. Left out: the fork host (a child that qemu-user forks from a
# program with running threads can block for good on a lock of qemu's own,
# in its system-call path), the plugin hosts' load and unload cycles (they
# measure the process's memory) and the teardown host under valgrind
# (valgrind runs x86-64 code only).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--full" ]]; then
    export CALLGATE_FULL=1
fi

TARGET=aarch64-unknown-linux-gnu
CC_A64=aarch64-linux-gnu-gcc
CXX_A64=aarch64-linux-gnu-g++
SYSROOT=/usr/aarch64-linux-gnu
OUT=target/aarch64
HOSTS=(abandon bad_input churn depth dlclose init plugins signals teardown unwind)
FILTERS=(abandon:: bad_input:: churn:: depth:: dlclose:: init_background::
    signals:: teardown:: unwind::)
# As in the x86-64 release row: the 100 plugin copies in one process (the
# first in static TLS, the others in dynamic TLS: the dynamic TLS pass; the
# dlclose and unwind hosts put the fixture there too).
FILTERS+=(plugins::a_hundred_plugins plugins::copies_are_distinct
    plugins::callgate_thread_locals)

step() { printf '\n==> %s\n' "$*"; }
die() {
    printf 'aarch64.sh: %s\n' "$*" >&2
    exit 1
}

for tool in "$CC_A64" "$CXX_A64" qemu-aarch64; do
    command -v "$tool" >/dev/null || die "$tool not found (see cargo xtask test --list)"
done

step "the runtime and the fixture for $TARGET, lints and doc warnings as errors"
cargo clippy -p callgate -p callgate-fixture --all-targets --target "$TARGET" --target-dir "$OUT/clippy" --quiet \
    -- -D warnings
RUSTDOCFLAGS="-D warnings --document-private-items" cargo doc --no-deps -p callgate \
    --target "$TARGET" --target-dir "$OUT/clippy" --quiet

step "the runtime's unit tests for $TARGET, under qemu-aarch64"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER="$CC_A64"
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L $SYSROOT" \
    cargo test -p callgate --lib --target "$TARGET" --target-dir "$OUT" --quiet

step "the fixture for $TARGET (release)"
cargo build -p callgate-fixture --target "$TARGET" --target-dir "$OUT" --release --quiet
FIXTURE="$PWD/$OUT/$TARGET/release/libcallgate_fixture.so"
machine=$(readelf -h "$FIXTURE" | grep Machine)
grep -q AArch64 <<<"$machine" || die "the fixture is not an aarch64 library: $machine"

step "the C hosts ($CC_A64) and the C++ one ($CXX_A64), each started under qemu-aarch64"
mkdir -p "$OUT/bin" "$OUT/hosts"
for host in "${HOSTS[@]}" exception; do
    if [[ $host == exception ]]; then
        compiler=$CXX_A64 source=tests/c/hosts/exception.cc
    else
        compiler=$CC_A64 source=tests/c/hosts/$host.c
    fi
    "$compiler" -O2 -g -Wall -Wextra -Werror -pthread -Itests/c/include \
        "$source" -o "$OUT/bin/$host" -ldl
    printf '#!/bin/sh\nexec qemu-aarch64 -L %s %s "$@"\n' "$SYSROOT" "$PWD/$OUT/bin/$host" \
        >"$OUT/hosts/$host"
    chmod +x "$OUT/hosts/$host"
done
"$OUT/hosts/churn" "$FIXTURE" burst 4 >/dev/null ||
    die "an aarch64 host does not run under qemu-aarch64"

# The x86-64 test programs that check the aarch64 builds run straight from
# their files: cargo's lock on the debug build is held only while it makes
# them, so the row can run beside the others.
test_binary() {
    cargo test -p callgate-dev --test "$1" --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1
}

step "the fast paths' machine code in the release benchmark fixture for $TARGET (tests/codegen)"
codegen=$(test_binary codegen)
[[ -x "$codegen" ]] || die "the codegen test program did not build"
CALLGATE_CODEGEN_TARGETS=$TARGET "$codegen" --quiet

step "the C-host tests against the aarch64 fixture (under qemu-aarch64)"
hosts=$(test_binary hosts)
[[ -x "$hosts" ]] || die "the hosts test program did not build"
CALLGATE_TEST_EMULATOR=qemu-aarch64 CALLGATE_TEST_HOSTS="$PWD/$OUT/hosts" \
    CALLGATE_TEST_TARGET=$TARGET CALLGATE_TEST_FIXTURE="$FIXTURE" CALLGATE_FIXTURE_PROFILE=release \
    "$hosts" "${FILTERS[@]}" --skip destructor_calls_leak_nothing_under_memcheck
