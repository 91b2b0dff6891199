#!/usr/bin/env bash
# valgrind over the C host programs of tests/c/hosts driving the debug build
# of the fixture library (tests/fixture), at a reduced size:
#
#   memcheck  no definite leak, no invalid read or write: thread churn (plain
#             and in barrier-synchronised waves), 1 000-deep nesting (bound
#             and per-call), callbacks from a 64 KiB stack and a swapcontext
#             stack, callbacks on coroutine stacks finishing out of order
#             (bound and per call), the bad-input cases (panics, errors, panicking Local
#             hooks), calls at exit, callbacks abandoned by longjmp (bound
#             and per-call); and the data program compiled against
#             the generated header (tests/c/linked/data.c): every slice,
#             owned-result and buffer case, owned values freed on another
#             thread, create/free cycles; the callbacks program compiled the
#             same way (tests/c/linked/callbacks.c): user data through the
#             table of local callbacks (qsort_r, C threads), closures made,
#             called, freed on another thread and while a call is in them,
#             once closures as thread start routines, an FnMut closure's
#             calls abandoned by longjmp (one on a thread that then exits,
#             others inside per-call callbacks whose contexts go to other
#             threads) and one suspended inside it on a swapcontext stack, a
#             concurrent closure called by
#             many threads, freed while calls are in it and as they
#             return, and left by longjmp on threads that then exit —
#             every value dropped
#             exactly once; the values program (tests/c/linked/values.c):
#             enums C passes checked against their variants, a struct by
#             value; and the test binaries that hand Rust state and
#             closures to SQLite, libuv and glib and to C threads
#             (tests/libraries, runtime/closures.rs, attribute/user_data.rs); load/call/unload
#             cycles of a plugin copy (tests/hosts/plugins.rs builds them), whose
#             unload must free the context pool and the last-error messages
#   helgrind  no data race: contexts reused across threads in churn waves,
#             the nesting harness, and closures and user data shared by C
#             threads that are all bound at once (the callbacks program:
#             the FnMut closure's calls ordered by its turns alone, a
#             concurrent closure's drop after its calls by the hazard
#             words' annotations)
#
# Suppressions (scripts/valgrind.supp) cover only false positives of the
# tools' model of glibc or std, each documented there. CALLGATE_FULL=1
# (cargo xtask test --full) runs larger sizes. Exits non-zero if any run
# reports an error.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    if [[ "${CI:-}" == "true" ]]; then
        echo "valgrind.sh: valgrind is not installed" >&2
        exit 1
    fi
    echo "valgrind.sh: valgrind is not installed; skipping (apt-get install valgrind)" >&2
    exit 0
fi

# The hosts are built by the dev package's build script into its OUT_DIR;
# ask cargo where that is. The fixture is built next to it.
cargo build --workspace --lib --quiet
out_dir=$(cargo build -p callgate-dev --lib --message-format=json 2>/dev/null |
    grep '"reason":"build-script-executed"' |
    grep '"package_id":"[^"]*callgate-dev' |
    grep -o '"out_dir":"[^"]*"' | cut -d'"' -f4 | tail -1)
hosts="$out_dir/hosts"
fixture="$out_dir/../../../libcallgate_fixture.so"
# The data program is compiled against the generated header by its test,
# into the target directory's tmp/linked.
cargo test -p callgate-dev --test hosts --quiet -- data:: callbacks:: values:: >/dev/null
# The plugin copies are generated and built by their test, into the target
# directory's tmp/plugins.
cargo test -p callgate-dev --test hosts --quiet -- copies_are_distinct >/dev/null
target_dir=$(cargo metadata --format-version 1 --no-deps |
    grep -o '"target_directory":"[^"]*"' | cut -d'"' -f4)
linked="$target_dir/tmp/linked"
plugin="$target_dir/tmp/plugins/target/debug/libcallgate_plugin_000.so"
if [[ ! -x "$hosts/churn" || ! -f "$fixture" || ! -x "$linked/data" || ! -x "$linked/callbacks" || ! -x "$linked/values" || ! -f "$plugin" ]]; then
    echo "valgrind.sh: hosts ($hosts), fixture ($fixture), linked programs ($linked) or plugin copy ($plugin) missing" >&2
    exit 1
fi

# test_binary NAME: the path of the dev package's integration test NAME.
test_binary() {
    cargo test -p callgate-dev --test "$1" --no-run --message-format=json 2>/dev/null |
        grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1
}

if [[ "${CALLGATE_FULL:-}" == "1" ]]; then
    churn=4000 together=1000 depth=1000 cycles=100000 closures=2000 unloads=200
else
    churn=400 together=200 depth=1000 cycles=10000 closures=100 unloads=25
fi

export RUST_BACKTRACE=0
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
failures=0

# run TOOL NAME HOST ARGS...: one valgrind run of a host with the fixture.
run() {
    local tool=$1 name=$2 host=$3
    shift 3
    check "$tool" "$name" "$hosts/$host" "$fixture" "$@"
}

# check TOOL NAME PROGRAM ARGS...: one valgrind run, its output kept in $log;
# the program must print a `result=ok` line (a Rust test binary, run by
# check_tests, its `test result: ok.` line). With children=yes the programs
# it starts run under the same tool (a test binary's tests that run their
# body in a child process of their own).
success='^result=ok$'
children=no
check() {
    local tool=$1 name=$2
    shift 2
    local options=(--error-exitcode=99 --suppressions=scripts/valgrind.supp
                   --trace-children="$children")
    case $tool in
        memcheck) options+=(--leak-check=full --errors-for-leak-kinds=definite
                            --show-leak-kinds=definite) ;;
        helgrind) options+=(--history-level=approx) ;;
    esac
    local started=$SECONDS status=0
    valgrind --tool="$tool" "${options[@]}" "$@" \
        >"$log/$name.out" 2>"$log/$name.err" || status=$?
    local summary
    summary=$(grep -h "ERROR SUMMARY" "$log/$name.err" | tail -1 | sed 's/^==[0-9]*== //')
    if [[ $status -eq 0 ]] && grep -q "$success" "$log/$name.out"; then
        printf '  ok    %-9s %-26s %3ss  %s\n' "$tool" "$name" $((SECONDS - started)) "$summary"
    else
        printf '  FAIL  %-9s %-26s exit %s  %s\n' "$tool" "$name" "$status" "$summary"
        sed 's/^/        /' "$log/$name.err" | grep -v '^ *$' | head -120
        tail -5 "$log/$name.out" | sed 's/^/        /'
        failures=$((failures + 1))
    fi
}

echo "memcheck: no definite leaks, no invalid reads or writes"
run memcheck churn churn churn "$churn" 8 no-rss
run memcheck churn-together churn together "$together" 8 no-rss
run memcheck nest depth nest "$depth"
run memcheck nest-per-call depth nest-per-call "$depth"
run memcheck small-stack depth small-stack 64
run memcheck swapcontext depth swapcontext 64
run memcheck interleaved depth interleaved 64
run memcheck bad-input bad_input returns
run memcheck exit-handlers teardown exit bound
run memcheck longjmp abandon longjmp 16
run memcheck longjmp-per-call abandon longjmp-per-call 16
check memcheck data-boundary "$linked/data" boundary
check memcheck data-threads "$linked/data" threads 1000
check memcheck data-cycles "$linked/data" cycles "$cycles" no-rss
check memcheck callbacks-table "$linked/callbacks" table
check memcheck callbacks-threads "$linked/callbacks" threads 8 200
check memcheck callbacks-closures "$linked/callbacks" closures "$closures"
FIXTURE_INIT=none check memcheck callbacks-abandon "$linked/callbacks" abandon 20
FIXTURE_INIT=none check memcheck callbacks-handed-on "$linked/callbacks" handed-on
check memcheck callbacks-suspended "$linked/callbacks" suspended
check memcheck callbacks-concurrent "$linked/callbacks" concurrent 4 200
check memcheck values "$linked/values"

# check_tests NAME [FILTER]: the dev package's integration test NAME (its
# tests matching FILTER) under memcheck, one test at a time; the child
# processes a test runs its body in are checked with it (a memcheck error
# there fails the child, and so the test).
check_tests() {
    local binary
    binary=$(test_binary "$1")
    success='^test result: ok\.' children=yes check memcheck "$1${2:+-${2%::}}" "$binary" --test-threads=1 ${2:+"$2"}
}
for library in sqlite uv glib lua; do
    check_tests libraries "$library::"
done
check_tests runtime closures::
check_tests attribute user_data::

check memcheck plugin-unload-cycles "$hosts/plugin_cycles" "$plugin" "$unloads"
check memcheck plugin-last-error "$hosts/plugin_unload" "$plugin" last_error 5

# Contexts move between threads through the free list, ordered by its
# atomics; the runtime tells helgrind about that edge with happens-before
# annotations (runtime/src/valgrind.rs), so the runs include the background
# init's detached thread, whose context is reused by threads that overlap
# it, and any race helgrind reports on a context is real. (Without the
# annotations the churn run reports races on every recycled context.)
echo "helgrind: no data race on contexts reused across threads"
run helgrind churn churn churn "$together" 8 no-rss
run helgrind churn-together churn together "$together" 8 no-rss
run helgrind nest depth nest "$depth"
run helgrind nest-per-call depth nest-per-call "$depth"
# A closure's calls from several threads take turns on its lock; its last
# reference, dropped on any thread, frees it. A concurrent closure's calls
# announce it in their threads' hazard words, and its drop waits for them.
check helgrind callbacks-threads "$linked/callbacks" threads 4 100
check helgrind callbacks-closures "$linked/callbacks" closures 20
# (Without its fork step: helgrind does not know that the child lacks the
# parent's other threads, and takes the child's reclaim of their contexts
# for races with them.)
check helgrind callbacks-concurrent "$linked/callbacks" concurrent 4 100 no-fork

if [[ $failures -ne 0 ]]; then
    echo "valgrind.sh: $failures run(s) failed" >&2
    exit 1
fi
echo "valgrind.sh: all runs clean"
