#!/usr/bin/env bash
# ThreadSanitizer and AddressSanitizer over the C-host scenarios: the test
# fixture built with a nightly `-Zsanitizer=…` and `-Zbuild-std` (so std is
# instrumented too), loaded by the C hosts compiled with the same
# `-fsanitize=…`, and the callbacks program (user data and closures shared
# by C threads) linked against it. Needs the nightly toolchain with `rust-src`; without it,
# prints one `SKIPPED: …` line and succeeds.
#
# Options: ASan runs with detect_leaks=0, because contexts and `#[local]`
# values are recycled and never freed, by design (memcheck checks definite
# leaks in scripts/valgrind.sh instead). No report is suppressed.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "SKIPPED: sanitizers: no nightly toolchain (rustup toolchain install nightly --component rust-src)"
    exit 0
fi
sysroot=$(rustup run nightly rustc --print sysroot)
if [[ ! -d "$sysroot/lib/rustlib/src/rust/library" ]]; then
    echo "SKIPPED: sanitizers: the nightly toolchain has no rust-src (rustup component add rust-src --toolchain nightly)"
    exit 0
fi

target=x86_64-unknown-linux-gnu
started=$SECONDS
# The callbacks program (tests/c/linked/callbacks.c) is compiled against the
# header generated from the fixture, which its test writes (stable build).
cargo test -p callgate-dev --test hosts --quiet -- callbacks:: >/dev/null
target_dir=$(cargo metadata --format-version 1 --no-deps |
    grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)
header_dir="$target_dir/tmp/linked"
if [[ ! -f "$header_dir/fixture.h" ]]; then
    echo "sanitizers: the fixture's header ($header_dir/fixture.h) is missing" >&2
    exit 1
fi

run_host() {
    local what=$1
    shift
    printf '  %s\n' "$*"
    if ! "$@" >"$log" 2>&1; then
        echo "sanitizers: $what failed: $*" >&2
        cat "$log" >&2
        exit 1
    fi
}

for sanitizer in thread address; do
    dir=target/sanitizer-$sanitizer
    echo "==> $sanitizer sanitizer: build the fixture"
    # ThreadSanitizer needs std instrumented too (its synchronisation would
    # otherwise go unseen); AddressSanitizer does not, so its build skips
    # rebuilding std.
    build_std=()
    [[ $sanitizer == thread ]] && build_std=(-Zbuild-std)
    RUSTFLAGS="-Zsanitizer=$sanitizer" rustup run nightly cargo build --quiet --release \
        "${build_std[@]}" --target "$target" -p callgate-fixture --target-dir "$dir"
    fixture=$dir/$target/release/libcallgate_fixture.so
    hosts=$dir/hosts
    log=$dir/host.log
    mkdir -p "$hosts"
    flags=(-O1 -g -fsanitize="$sanitizer" -fno-omit-frame-pointer -Wall -Wextra -Werror -pthread)
    # The hosts are instrumented by the C compiler but linked with the
    # sanitizer runtime of the Rust toolchain that built the fixture: the
    # fixture calls into that runtime's interface (GCC's own libtsan lacks
    # some of its entry points, `__tsan_memcpy` among them), which the
    # executable exports to it (`-rdynamic`).
    runtime=$sysroot/lib/rustlib/$target/lib/librustc-nightly_rt.${sanitizer:0:1}san.a
    # shellcheck disable=SC2054 # linker flags, one word each
    link=(-rdynamic -Wl,--whole-archive "$runtime" -Wl,--no-whole-archive -ldl -lpthread -lm -lrt)
    for host in churn depth dlclose abandon signals; do
        cc "${flags[@]}" -c tests/c/hosts/$host.c -o "$hosts/$host.o"
        c++ "$hosts/$host.o" -o "$hosts/$host" "${link[@]}"
    done
    # Linked against the instrumented fixture, found through DT_RPATH,
    # which (unlike DT_RUNPATH) comes before LD_LIBRARY_PATH: under cargo,
    # that names target/debug, whose uninstrumented fixture would hide the
    # runtime's atomics from the sanitizer.
    fixture_dir=$(cd "$(dirname "$fixture")" && pwd)
    cc "${flags[@]}" -std=c11 -I "$header_dir" -c tests/c/linked/callbacks.c \
        -o "$hosts/callbacks.o"
    c++ "$hosts/callbacks.o" -o "$hosts/callbacks" -L "$fixture_dir" -lcallgate_fixture \
        -Wl,--disable-new-dtags,-rpath,"$fixture_dir" "${link[@]}"
    loaded=$(ldd "$hosts/callbacks" | awk '/libcallgate_fixture/ {print $3}')
    if [[ "$(realpath "$loaded")" != "$(realpath "$fixture")" ]]; then
        echo "sanitizers: the callbacks host loads $loaded, not $fixture" >&2
        exit 1
    fi

    echo "==> $sanitizer sanitizer: run the hosts"
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
    export ASAN_OPTIONS="halt_on_error=1 detect_leaks=0"
    run_host churn "$hosts/churn" "$fixture" churn 200 8 no-rss
    run_host burst "$hosts/churn" "$fixture" burst 64 no-rss
    run_host nesting "$hosts/depth" "$fixture" nest 1000
    run_host nesting "$hosts/depth" "$fixture" nest-per-call 1000
    run_host dlclose "$hosts/dlclose" "$fixture" live 4
    run_host longjmp "$hosts/abandon" "$fixture" longjmp 64
    run_host longjmp "$hosts/abandon" "$fixture" longjmp-per-call 64
    run_host signals "$hosts/signals" "$fixture" reentrant-binds 100
    run_host signals "$hosts/signals" "$fixture" reentrant-per-call 50
    # User data and an FnMut closure shared by C threads (the closure's
    # calls take turns), closures freed on other threads and while a call
    # is in them, once closures as thread start routines, an FnMut
    # closure's calls abandoned by longjmp (also inside per-call callbacks
    # whose contexts then go to other threads); a concurrent closure called by
    # many threads at once, freed while calls are in it, its calls left by
    # longjmp.
    run_host callbacks "$hosts/callbacks" threads 8 200
    run_host callbacks "$hosts/callbacks" closures 50
    # (Without the init thread's context, which would race with the
    # contexts these two hand from thread to thread.)
    FIXTURE_INIT=none run_host callbacks "$hosts/callbacks" abandon 20
    FIXTURE_INIT=none run_host callbacks "$hosts/callbacks" handed-on
    run_host callbacks "$hosts/callbacks" concurrent 8 200
    # Not run here: pthread_exit, cancellation and a C++ exception through a
    # callback. Instrumented code keeps the landing pads that a plain release
    # build drops, as a debug build does, so the forced unwind stops in the
    # callback's frame and glibc aborts ("exception not rethrown"): a
    # property of the instrumented build, not of the runtime. The release
    # and debug fixtures cover these cases (tests/hosts/abandon.rs).
done
echo "sanitizers: ok in $((SECONDS - started)) s"
