#!/usr/bin/env bash
# The benchmark still builds its fixture variants and runs: one round (a
# callback that returns a wrong value fails it; the figures are held to
# nothing on a shared machine). Its --markdown output, which the guide's
# tables are (guide/src/performance/tables.md), still makes all four
# tables, and --save-json writes the same run's JSON object.
set -euo pipefail
cd "$(dirname "$0")/.."

rm -f target/bench-run.json
markdown=$(cargo run --quiet -p callgate-bench -- --rounds 1 --markdown \
    --save-json target/bench-run.json 2>/dev/null)
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["cthread.bound_ns"] > 0' \
    target/bench-run.json || {
    echo "callgate-bench --save-json wrote no JSON object of the run" >&2
    exit 1
}
# shellcheck disable=SC2016 # the backquotes are Markdown, not shell
for table in '| what | cdylib (dlopen) |' '| `bench_bound` code shifted by |' \
    '| environment |' '| what | min | median | max |'; do
    grep -qF -- "$table" <<<"$markdown" || {
        echo "callgate-bench --markdown made no table starting '$table'" >&2
        exit 1
    }
done
echo "bench: ran one round; four tables and the JSON object written"
