#!/usr/bin/env bash
# Runs the C-host tests against callgate built for musl: the fixture as a
# musl cdylib (release) and the C hosts compiled with musl-gcc,
# loaded by musl's dynamic linker. The Rust test binaries that start the
# hosts and check what they print are the ordinary (glibc) ones; they are
# pointed at the musl builds with CALLGATE_TEST_HOSTS, CALLGATE_TEST_FIXTURE
# and CALLGATE_TEST_LIBC=musl.
#
#   scripts/musl.sh          the CI-sized run
#   scripts/musl.sh --full   the large iteration counts (CALLGATE_FULL=1)
#
# Needs the Rust target for the pinned toolchain and musl-gcc (musl-tools);
# `cargo xtask test` skips it without them, and it fails if they are missing.
#
# Left out, each for a glibc feature it tests: the swapcontext test of the
# depth host (musl has no ucontext functions), the dlclose host (dlinfo's
# RTLD_DI_TLS_DATA; musl's dlclose never unloads), plugins (dlmopen), the
# C++ exception host (no C++ compiler for musl here) and the teardown host
# under valgrind (it runs the glibc build). The teardown host stands a
# pthread key for glibc's __cxa_thread_atexit_impl, which musl lacks.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--full" ]]; then
    export CALLGATE_FULL=1
fi

TARGET=x86_64-unknown-linux-musl
OUT=target/musl
HOSTS=(abandon bad_input churn depth fork init signals teardown)
FILTERS=(abandon:: bad_input:: churn:: depth:: fork:: init_background::
    signals:: teardown::)

step() { printf '\n==> %s\n' "$*"; }
die() {
    printf 'musl.sh: %s\n' "$*" >&2
    exit 1
}

command -v musl-gcc >/dev/null || die "musl-gcc not found (apt-get install musl-tools)"

# A cdylib for musl links the unwinder as libgcc_s, which Debian builds only
# for glibc (its libgcc_s needs glibc's _dl_find_object). Rust's musl target
# ships LLVM's libunwind: a static copy named libgcc_s.a, found first, links
# it into the library instead, as Alpine's libgcc would provide it. The
# debug fixture's hosts are the x86-64 debug row's: what this row guards
# (the loader, the keys, the exit) does not change with the profile.
step "the runtime and the fixture for $TARGET (lints as errors; the fixture in release), with LLVM's libunwind linked in"
mkdir -p "$OUT/unwind"
cp "$(rustc --print sysroot)/lib/rustlib/$TARGET/lib/self-contained/libunwind.a" \
    "$OUT/unwind/libgcc_s.a"
musl_build=(env CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_LINKER=musl-gcc
    RUSTFLAGS="-C target-feature=-crt-static -C link-arg=-L$PWD/$OUT/unwind")
"${musl_build[@]}" cargo clippy -p callgate -p callgate-fixture --all-targets --target "$TARGET" \
    --target-dir "$OUT/clippy" --quiet -- -D warnings
"${musl_build[@]}" cargo build -p callgate-fixture --target "$TARGET" --target-dir "$OUT" \
    --release --quiet
library="$OUT/$TARGET/release/libcallgate_fixture.so"
needed=$(readelf -d "$library" | grep NEEDED || true)
grep -q 'libc.so\]' <<<"$needed" || die "$library does not link musl's libc.so: $needed"
if grep -qE 'libc.so.6|libgcc_s' <<<"$needed"; then
    die "$library links a glibc library: $needed"
fi

step "the C hosts (musl-gcc)"
mkdir -p "$OUT/hosts"
for host in "${HOSTS[@]}"; do
    musl-gcc -O2 -g -Wall -Wextra -Werror -pthread -Itests/c/include \
        "tests/c/hosts/$host.c" -o "$OUT/hosts/$host" -ldl
done

step "the C-host tests against the musl fixture"
CALLGATE_TEST_LIBC=musl CALLGATE_TEST_HOSTS="$PWD/$OUT/hosts" \
    CALLGATE_TEST_FIXTURE="$PWD/$library" CALLGATE_FIXTURE_PROFILE=release \
    cargo test -p callgate-dev --test hosts -- "${FILTERS[@]}" \
    --skip a_cpp_exception_through_a_callback_is_survived \
    --skip callbacks_work_from_a_swapcontext_stack \
    --skip a_call_suspended_on_a_coroutine_stack_keeps_its_local_value \
    --skip a_suspended_call_outliving_the_call_it_started_under_keeps_its_local_value \
    --skip green_threads_switched_at_random_never_share_a_local_value \
    --skip a_call_abandoned_on_a_freed_coroutine_stack_is_not_read \
    --skip destructor_calls_leak_nothing_under_memcheck
