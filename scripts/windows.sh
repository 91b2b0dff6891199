#!/usr/bin/env bash
# Cross-builds callgate for x86_64-pc-windows-gnu and runs the Windows tests
# under wine: the runtime with warnings as errors, the test fixture as a DLL,
# and the C hosts of tests/windows/hosts (mingw-w64) that load it. The
# runtime is also checked (clippy, not run) for the x86-64 and ARM64 MSVC
# targets.
#
#   scripts/windows.sh          the CI-sized run
#   scripts/windows.sh --full   50 000 short-lived threads instead of 10 000
#                               (CALLGATE_FULL=1)
#
# Needs the Rust targets, mingw-w64 and wine (`cargo xtask test --list`
# says how to install them; it skips this run without them), and fails if
# anything cannot run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--full" ]]; then
    export CALLGATE_FULL=1
fi

TARGET=x86_64-pc-windows-gnu
CC_WIN=x86_64-w64-mingw32-gcc
OUT=target/windows-tests
# A target directory of its own: the row runs beside the others.
export CARGO_TARGET_DIR=target/windows
started=$SECONDS

step() { printf '\n==> %s\n' "$*"; }
die() {
    printf 'windows.sh: %s\n' "$*" >&2
    exit 1
}

command -v "$CC_WIN" >/dev/null || die "$CC_WIN not found (apt-get install gcc-mingw-w64-x86-64-win32)"
command -v wine >/dev/null || die "wine not found (apt-get install wine64)"
WINESERVER=$(command -v wineserver || true)
for candidate in /usr/lib/wine/wineserver64 /usr/lib/wine/wineserver; do
    [[ -n "$WINESERVER" ]] && break
    [[ -x "$candidate" ]] && WINESERVER=$candidate
done
[[ -n "$WINESERVER" ]] || die "wineserver not found"

step "the runtime and the fixture DLL for $TARGET, warnings as errors"
RUSTFLAGS="-D warnings" cargo clippy -p callgate -p callgate-fixture --all-targets --target "$TARGET" \
    --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps -p callgate --target "$TARGET" --quiet
RUSTDOCFLAGS="-D warnings --document-private-items" cargo doc --no-deps -p callgate \
    --target "$TARGET" --quiet

step "the runtime for the MSVC targets (compiled, not run), warnings as errors"
for msvc in x86_64-pc-windows-msvc aarch64-pc-windows-msvc; do
    RUSTFLAGS="-D warnings" cargo clippy -p callgate -p callgate-fixture --all-targets \
        --target "$msvc" --quiet -- -D warnings
done
RUSTFLAGS="-D warnings" cargo build -p callgate-fixture --target "$TARGET" --release --quiet

step "the C hosts and the ProcessPrng shim (mingw-w64)"
mkdir -p "$OUT"
cp "$CARGO_TARGET_DIR/$TARGET/release/callgate_fixture.dll" "$OUT/"
CFLAGS=(-O2 -std=c11 -Wall -Wextra -Werror -Itests/windows/hosts)
"$CC_WIN" "${CFLAGS[@]}" -shared -o "$OUT/bcryptprimitives.dll" \
    tests/windows/shim/bcryptprimitives.c -ladvapi32
for host in threads init errors reload bench; do
    "$CC_WIN" "${CFLAGS[@]}" -o "$OUT/$host.exe" "tests/windows/hosts/$host.c"
done

step "callgate-header reads the DLL; a host links against it through that header"
cargo run -p callgate-header --quiet -- "$OUT/callgate_fixture.dll" -o "$OUT/callgate_fixture.h"
grep -q '__declspec(dllimport)' "$OUT/callgate_fixture.h" || die "the header has no dllimport"
grep -q 'CALLGATE_FIXTURE_API int32_t CALLGATE_FIXTURE_CALL fixture_plain(int32_t value);' \
    "$OUT/callgate_fixture.h" || die "the header does not declare fixture_plain"
"$CC_WIN" "${CFLAGS[@]}" -I"$OUT" -o "$OUT/linked.exe" tests/windows/hosts/linked.c \
    "$OUT/callgate_fixture.dll"

export WINEPREFIX="$PWD/$OUT/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
cleanup() { "$WINESERVER" -k 2>/dev/null || true; }
trap cleanup EXIT

step "wine: a private prefix"
prefix_started=$SECONDS
wineboot --init >/dev/null 2>&1 || die "wineboot failed (WINEPREFIX=$WINEPREFIX)"
echo "prefix ready in $((SECONDS - prefix_started)) s"

step "the runtime's unit tests, on Windows"
mkdir -p "$CARGO_TARGET_DIR/$TARGET/debug/deps"
cp "$OUT/bcryptprimitives.dll" "$CARGO_TARGET_DIR/$TARGET/debug/deps/"
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine RUSTFLAGS="-D warnings" \
    cargo test -p callgate --lib --target "$TARGET" --quiet || die "the unit tests failed under wine"

# Runs one host under wine from $OUT (so the shim DLL is found beside it).
# A host that fails without a word (a crash, or wine itself failing:
# WINEDEBUG=-all silences both) runs once more with wine's error and
# exception channels on, for the log only: the step fails either way.
run() {
    local name=$1
    shift
    printf -- '--- %s %s\n' "$name" "$*"
    local t=$SECONDS status=0
    (cd "$OUT" && wine "./$name.exe" callgate_fixture.dll "$@") || status=$?
    if ((status != 0)); then
        printf -- '--- %s %s: exit status %d; once more with WINEDEBUG=err+all,+seh\n' \
            "$name" "$*" "$status"
        (cd "$OUT" && WINEDEBUG=err+all,+seh wine "./$name.exe" callgate_fixture.dll "$@") 2>&1 |
            tail -n 40 || true
        die "$name $* failed (exit status $status)"
    fi
    printf -- '--- %s: %d s\n' "$name" $((SECONDS - t))
}

if [[ -n "${CALLGATE_FULL:-}" ]]; then
    churn_threads=50000
else
    churn_threads=10000
fi

step "threads: first calls together, short-lived threads"
run threads burst 64
run threads churn "$churn_threads" 32
HOST_FILL_TLS=1 run threads churn 500 16
step "fibers: callbacks on two fibers of a thread finishing out of order"
run threads fibers
step "fibers: deleting a suspended fiber that carries a thread's exit hook"
run threads fiber-delete
step "ExitThread inside callbacks: bound, nested, holding the Token, per call"
run threads exit-in-call
step "init: early callers wait for a background init; a failed init"
FIXTURE_INIT=slow run init slow
FIXTURE_INIT=fail run init fail
step "panics, errors and the last-error API; bound and per-call; with no FLS index left"
run errors
run errors no-fls
step "LoadLibrary/FreeLibrary cycles"
FIXTURE_INIT=none run reload 20
step "a host linked through the generated header"
printf -- '--- linked\n'
(cd "$OUT" && wine ./linked.exe) || die "linked failed"
step "fast path against a raw call (under wine: indicative only)"
run bench 20000000

"$WINESERVER" -w
echo
echo "windows: all passed in $((SECONDS - started)) s"
