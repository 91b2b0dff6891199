#!/usr/bin/env bash
# The runtime's unit tests, and the trampolines of tests/attribute/values.rs,
# under Miri (nightly): every memory access of the unsafe code checked
# against Rust's aliasing rules (both of Miri's models), Miri's data-race
# detector and weak-memory emulation over the free list, the turns and the
# hazard words (their tests run threads against each other), and a leak
# check at the end.
#
# Miri runs no assembly and has no `pthread_getattr_np`: the portable
# `thread_local!` slot (`--cfg callgate_portable_tls`) stands in for the
# x86-64 one; `cfg(miri)` leaves out the valgrind client requests, the
# trampolines' alignment directive, the aligned entry of the thread-exit
# destructor, the loader calls that pin the library (`dladdr`,
# `__dso_handle`) and the lookup of the thread's stack bounds (unknown
# there, as off Linux; the two unit tests that need them are left out);
# the threaded tests run fewer rounds. Needs the nightly toolchain with
# `rust-src` and `miri`; without them, prints one
# `SKIPPED: …` line and succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "SKIPPED: miri: no nightly toolchain (rustup toolchain install nightly --component miri,rust-src)"
    exit 0
fi
for component in rust-src miri; do
    if ! rustup component list --toolchain nightly --installed | grep -q "^$component"; then
        echo "SKIPPED: miri: the nightly toolchain has no $component (rustup component add $component --toolchain nightly)"
        exit 0
    fi
done

started=$SECONDS
# Under both of Miri's aliasing models: Stacked Borrows (its default) and
# Tree Borrows. Permissive provenance: the read of a word of a frame that
# may be gone (`stack::read_word`) takes its address from an integer, as
# the assembly it stands in for does.
for model in "" -Zmiri-tree-borrows; do
    echo "miri: ${model:+aliasing model }${model:-Stacked Borrows, the default aliasing model}"
    miri=(env RUSTFLAGS="--cfg callgate_portable_tls"
        MIRIFLAGS="-Zmiri-permissive-provenance $model")
    "${miri[@]}" cargo +nightly miri test -p callgate --lib --target-dir target/miri
    # And trampolines that `#[c_callback]` generated, called through their
    # C signatures from Rust: the gate, the bind, the contexts, the
    # argument checks and the fallbacks. (The other integration tests call
    # C helpers, which Miri cannot run.)
    "${miri[@]}" cargo +nightly miri test -p callgate-dev --test attribute \
        --target-dir target/miri -- values::
done
echo "miri: $((SECONDS - started)) s"
