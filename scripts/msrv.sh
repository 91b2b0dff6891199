#!/usr/bin/env bash
# Builds the published crates (callgate, callgate-macros, callgate-header)
# with the oldest Rust they declare: the workspace's `rust-version`. The
# other scripts use the pinned toolchain of rust-toolchain.toml; this one
# needs the older toolchain with the Windows target (`cargo xtask test
# --list` says how to install it), and checks the Linux build, the portable `thread_local!` slot and the
# Windows build with it, and the code the attributes generate: the test
# fixture uses every form of them, and the plugin example. Warnings are
# shown, not errors: lints are the pinned toolchain's business.
set -euo pipefail
cd "$(dirname "$0")/.."

msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
if [[ -z "$msrv" ]]; then
    echo "scripts/msrv.sh: no rust-version in Cargo.toml" >&2
    exit 1
fi
windows=x86_64-pc-windows-gnu

step() { printf '\n==> %s\n' "$*"; }

step "Rust $msrv (the workspace's rust-version)"
rustup run "$msrv" rustc --version || {
    echo "msrv.sh: no Rust $msrv (rustup toolchain install $msrv --profile minimal --target $windows)" >&2
    exit 1
}

step "the published crates with Rust $msrv"
cargo "+$msrv" check -p callgate -p callgate-macros -p callgate-header \
    --target-dir target/msrv --quiet
step "the code #[c_callback] and #[callgate::init] generate, with Rust $msrv"
cargo "+$msrv" check -p callgate-fixture -p callgate-example-plugin \
    --target-dir target/msrv --quiet
step "the runtime with the portable thread_local! slot, with Rust $msrv"
RUSTFLAGS="--cfg callgate_portable_tls" cargo "+$msrv" check -p callgate \
    --target-dir target/msrv-portable --quiet
step "the runtime and the fixture for $windows, with Rust $msrv"
cargo "+$msrv" check -p callgate -p callgate-fixture --target "$windows" \
    --target-dir target/msrv --quiet
