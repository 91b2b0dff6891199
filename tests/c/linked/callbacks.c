/* Callbacks for C APIs that take a `void *`, from C, through the header
 * callgate generates from the fixture (tests/fixture, `callbacks` module):
 * `local` callbacks reached through the exported table `fixture_callbacks`
 * with Rust state as their user data (glibc's qsort_r, C threads), and
 * closures as (function, data, free) — called from C threads, freed on
 * another thread, freed while a call is in flight, once closures as
 * pthread_create start routines.
 *
 * Compiled by the test (tests/hosts/callbacks.rs) against the generated header,
 * like data.c, with two headers of its own: callbacks_abandoned.h (abandon,
 * handed-on, suspended) and callbacks_concurrent.h (concurrent).
 *
 *   callbacks table          the table, qsort_r with a counted comparator,
 *                            NULL user data, a panicking comparison
 *   callbacks threads T N    T threads × N calls on shared user data and on
 *                            one FnMut closure, every thread bound before
 *                            any makes them
 *   callbacks closures N     N closures and N once closures made, called and
 *                            freed; a closure freed while a call is in it
 *   callbacks abandon N      N calls of an FnMut closure left by longjmp out
 *                            of C code inside them, each followed by calls
 *                            on the same thread and on another; one on a
 *                            thread that exits, followed by a call on the
 *                            next thread
 *   callbacks handed-on      calls of an FnMut closure left by longjmp
 *                            inside a per-call callback, whose context then
 *                            goes to another thread: at the exit of the
 *                            thread that cached it, and from a thread that
 *                            still lives (its key destructor, after its exit
 *                            hook ran)
 *                            (abandon and handed-on: with FIXTURE_INIT=none)
 *   callbacks suspended      a call suspended inside an FnMut closure on a
 *                            coroutine stack while the callback it started
 *                            under returns (glibc: swapcontext)
 *   callbacks concurrent T N T threads × N calls of one concurrent (Fn)
 *                            closure, half of them bound first, with nested
 *                            calls; the closure freed while T calls are
 *                            inside it, and as T calls return; calls left
 *                            by longjmp, whose thread keeps the closure
 *                            until it exits; fork with a call inside it
 *                            (not with no-fork: helgrind takes the child's
 *                            reclaim of the parent's threads' contexts for
 *                            races with those threads)
 *   callbacks misuse CASE    one misuse of a closure C owns, which must abort
 *                            the process with a message naming the closure:
 *                            free-twice, free-twice-in-call (the second
 *                            free while a call is inside it),
 *                            free-twice-concurrent, call-after-free (of an
 *                            FnMut closure, caught before its body runs),
 *                            once-twice, once-called-then-freed,
 *                            once-freed-then-called
 *
 * Every mode ends by checking that every Rust value it made was dropped
 * exactly once (fixture_values_live() back where it was). Prints
 * `key=value` lines and `result=ok`; a failed check prints
 * `FAIL: file:line: message` on stderr and exits 1. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "check.h"

typedef int32_t (*adder_fn)(void *, int32_t);
typedef void (*release_fn)(void *);
typedef void *(*start_fn)(void *);

/* ------------------------------------------------------------------------ */
/* The table and user data                                                   */
/* ------------------------------------------------------------------------ */

static void table(void) {
    int64_t live = fixture_values_live();
    const FixtureCallbacks *callbacks = &fixture_callbacks;
    CHECK(callbacks->fixture_compare_counted && callbacks->fixture_add_shared &&
              callbacks->fixture_sort_counter_destroy && callbacks->fixture_shared_total_destroy,
          "a table entry is NULL");

    /* glibc's qsort_r with the table's comparator and Rust state. */
    enum { N = 1000 };
    int32_t values[N];
    for (int i = 0; i < N; i++) values[i] = (int32_t)((i * 7919) % 1009) - 500;
    void *counter = fixture_sort_counter_new();
    CHECK(counter != NULL, "no counter");
    CHECK(fixture_values_live() == live + 1, "the counter is alive");
    qsort_r(values, N, sizeof values[0], callbacks->fixture_compare_counted, counter);
    for (int i = 1; i < N; i++) CHECK(values[i - 1] <= values[i], "unsorted at %d", i);
    int64_t comparisons = fixture_sort_counter_comparisons(counter);
    CHECK(comparisons >= N - 1, "%lld comparisons", (long long)comparisons);
    printf("comparisons=%lld\n", (long long)comparisons);

    /* A panicking comparison compares equal; qsort_r carries on. */
    int32_t poisoned[] = {3, INT32_MIN, 1, 2};
    qsort_r(poisoned, 4, sizeof poisoned[0], callbacks->fixture_compare_counted, counter);
    CHECK(strstr(last_error(), "panicked: INT32_MIN cannot be ordered") != NULL, "last error: %s",
          last_error());
    callbacks->fixture_sort_counter_destroy(counter);
    CHECK(fixture_values_live() == live, "the counter was dropped");

    /* NULL user data is an error naming the argument. */
    CHECK(callbacks->fixture_add_shared(NULL, 1) == -1, "NULL total accepted");
    CHECK(strcmp(last_error(), "argument `total` is NULL") == 0, "last error: %s", last_error());
    CHECK(fixture_shared_total_get(NULL) == INT64_MIN, "NULL total read");
    CHECK(fixture_sort_counter_comparisons(NULL) == -1, "NULL counter read");
    /* Destroying NULL is a no-op. */
    callbacks->fixture_shared_total_destroy(NULL);
    CHECK(fixture_values_live() == live, "every value dropped once");
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

struct worker {
    pthread_t thread;
    pthread_barrier_t *bound;
    void *total;
    adder_fn add;
    void *adder;
    int calls;
    int failures;
};

static void *work(void *arg) {
    struct worker *worker = arg;
    /* Every thread binds its context (a first callback) before any makes
     * the calls: no thread exits and hands its context to another before
     * the others are done, so each call into the FnMut closure is ordered
     * with the other threads' by the closure's turns alone (what helgrind
     * checks, scripts/valgrind.sh), not by a context passed on. */
    if (fixture_shared_total_get(worker->total) < 0) worker->failures++;
    pthread_barrier_wait(worker->bound);
    for (int i = 0; i < worker->calls; i++) {
        if (fixture_callbacks.fixture_add_shared(worker->total, 1) != 1) worker->failures++;
        if (worker->add(worker->adder, 1) < 0) worker->failures++;
    }
    return NULL;
}

struct release_job {
    release_fn release;
    void *data;
};

static void *release_on_thread(void *arg) {
    struct release_job *job = arg;
    job->release(job->data);
    return NULL;
}

/* Calls release(data) on a new thread, and waits for it. */
static void release_elsewhere(release_fn release, void *data) {
    struct release_job job = {release, data};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, release_on_thread, &job) == 0, "pthread_create");
    pthread_join(thread, NULL);
}

static void threads(int count, int calls) {
    int64_t live = fixture_values_live();
    void *total = fixture_shared_total_new();
    adder_fn add = NULL;
    release_fn release = NULL;
    void *adder = fixture_adder_new(0, &add, &release);
    CHECK(total && adder && add && release, "made the state and the closure");
    struct worker *workers = calloc((size_t)count, sizeof *workers);
    CHECK(workers != NULL, "out of memory");
    pthread_barrier_t bound;
    CHECK(pthread_barrier_init(&bound, NULL, (unsigned)count) == 0, "pthread_barrier_init");
    for (int i = 0; i < count; i++) {
        workers[i] = (struct worker){
            .bound = &bound, .total = total, .add = add, .adder = adder, .calls = calls};
        CHECK(pthread_create(&workers[i].thread, NULL, work, &workers[i]) == 0, "pthread_create");
    }
    int failures = 0;
    for (int i = 0; i < count; i++) {
        pthread_join(workers[i].thread, NULL);
        failures += workers[i].failures;
    }
    pthread_barrier_destroy(&bound);
    free(workers);
    int64_t expected = (int64_t)count * calls;
    CHECK(failures == 0, "%d calls failed", failures);
    CHECK(fixture_shared_total_get(total) == expected, "total %lld, expected %lld",
          (long long)fixture_shared_total_get(total), (long long)expected);
    /* The FnMut's running sum saw every call, none lost to an overlap. */
    CHECK(add(adder, 0) == expected, "running sum %d, expected %lld", add(adder, 0),
          (long long)expected);
    fixture_callbacks.fixture_shared_total_destroy(total);
    release_elsewhere(release, adder);
    CHECK(fixture_values_live() == live, "every value dropped once");
    printf("calls=%lld\n", (long long)expected * 2);
}

/* ------------------------------------------------------------------------ */
/* Closures                                                                  */
/* ------------------------------------------------------------------------ */

struct call_job {
    adder_fn add;
    void *data;
    int32_t value;
    int32_t result;
};

static void *call_on_thread(void *arg) {
    struct call_job *job = arg;
    job->result = job->add(job->data, job->value);
    return NULL;
}

/* add(data, value) on a new thread, waited for; returns its result. */
static int32_t call_on_new_thread(adder_fn add, void *data, int32_t value) {
    struct call_job job = {add, data, value, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, call_on_thread, &job) == 0, "pthread_create");
    pthread_join(thread, NULL);
    return job.result;
}

static void closures(int n) {
    int64_t live = fixture_values_live();
    uint64_t dropped = fixture_values_dropped();
    for (int i = 0; i < n; i++) {
        adder_fn add = NULL;
        release_fn release = NULL;
        void *adder = fixture_adder_new(i, &add, &release);
        CHECK(add(adder, 1) == i + 1, "first call");
        CHECK(add(adder, 2) == i + 3, "second call");
        CHECK(add(adder, 1000) == -1, "a panic returns the fallback");
        CHECK(strstr(last_error(), "panicked: 1000 is out of range") != NULL, "last error: %s",
              last_error());
        CHECK(add(adder, 0) == i + 3, "the panicking call added nothing");
        if (i % 2 == 0) {
            release(adder);
        } else {
            release_elsewhere(release, adder);
        }

        /* A once closure as a thread's start routine: runs once and frees
         * itself on that thread. */
        start_fn start = NULL;
        void *once = fixture_once_new(i, &start, &release);
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, start, once) == 0, "pthread_create");
        void *result = NULL;
        pthread_join(thread, &result);
        CHECK((intptr_t)result == i + 1, "the start routine returned %p", result);

        /* One that never runs is freed instead. */
        void *never = fixture_once_new(i, &start, &release);
        release(never);
    }
    CHECK(fixture_values_live() == live, "every closure dropped");
    CHECK(fixture_values_dropped() - dropped == (uint64_t)n * 3, "%llu dropped, expected %d",
          (unsigned long long)(fixture_values_dropped() - dropped), n * 3);

    /* Freed while a call is inside it: the drop waits for that call. */
    adder_fn add = NULL;
    release_fn release = NULL;
    void *adder = fixture_adder_new(5, &add, &release);
    struct call_job job = {add, adder, 2000, 0};
    pthread_t caller;
    CHECK(pthread_create(&caller, NULL, call_on_thread, &job) == 0, "pthread_create");
    fixture_hold_wait_inside();
    release(adder);
    CHECK(fixture_values_live() == live + 1, "dropped while a call was in it");
    fixture_hold_release();
    pthread_join(caller, NULL);
    CHECK(job.result == 2005, "the held call returned %d", job.result);
    CHECK(fixture_values_live() == live, "dropped by the held call's return");
    printf("closures=%d\n", n * 3 + 1);
}

/* After the helpers above, which they use. */
#include "callbacks_abandoned.h"
#include "callbacks_concurrent.h"

/* ------------------------------------------------------------------------ */
/* Misuse                                                                    */
/* ------------------------------------------------------------------------ */

/* One misuse of a closure's data, which the runtime turns into an abort
 * with a message (tests/hosts/callbacks.rs checks it): returns only if it did
 * not abort. */
static void misuse(const char *what) {
    adder_fn add = NULL;
    release_fn release = NULL;
    start_fn start = NULL;
    if (strcmp(what, "free-twice") == 0) {
        void *adder = fixture_adder_new(0, &add, &release);
        CHECK(add(adder, 1) == 1, "a call before the frees");
        release(adder);
        release(adder);
    } else if (strcmp(what, "free-twice-in-call") == 0) {
        /* The closure is alive: a call is inside it. */
        void *adder = fixture_adder_new(0, &add, &release);
        struct call_job job = {add, adder, 2000, 0};
        pthread_t caller;
        CHECK(pthread_create(&caller, NULL, call_on_thread, &job) == 0, "pthread_create");
        fixture_hold_wait_inside();
        release(adder);
        release(adder);
        fixture_hold_release();
        pthread_join(caller, NULL);
    } else if (strcmp(what, "free-twice-concurrent") == 0) {
        adder_fn call = NULL;
        void *tally = fixture_tally_new(NULL, &call, &release);
        CHECK(call(tally, 0) == 1, "a call before the frees");
        release(tally);
        release(tally);
    } else if (strcmp(what, "call-after-free") == 0) {
        /* Caught as it starts: the drop retired the closure's turn (the
         * allocation is kept as a tombstone). 1000 would make the body
         * panic, which would say so. */
        void *adder = fixture_adder_new(0, &add, &release);
        release(adder);
        add(adder, 1000);
    } else if (strcmp(what, "once-twice") == 0) {
        void *once = fixture_once_new(1, &start, &release);
        CHECK((intptr_t)start(once) == 2, "the first call");
        start(once);
    } else if (strcmp(what, "once-called-then-freed") == 0) {
        void *once = fixture_once_new(1, &start, &release);
        CHECK((intptr_t)start(once) == 2, "the call");
        release(once);
    } else if (strcmp(what, "once-freed-then-called") == 0) {
        void *once = fixture_once_new(1, &start, &release);
        release(once);
        start(once);
    } else {
        fprintf(stderr, "misuse: unknown case %s\n", what);
        exit(2);
    }
    printf("not_aborted=%s\n", what);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    int calls = argc > 3 ? atoi(argv[3]) : 0;
    if (strcmp(mode, "table") == 0) {
        table();
    } else if (strcmp(mode, "threads") == 0 && n > 0 && calls > 0) {
        threads(n, calls);
    } else if (strcmp(mode, "concurrent") == 0 && n > 0 && calls > 0) {
        concurrent(n, calls, !(argc > 4 && strcmp(argv[4], "no-fork") == 0));
    } else if (strcmp(mode, "closures") == 0 && n > 0) {
        closures(n);
    } else if (strcmp(mode, "abandon") == 0 && n > 0) {
        abandon(n);
    } else if (strcmp(mode, "handed-on") == 0) {
        handed_on();
    } else if (strcmp(mode, "misuse") == 0 && argc > 2) {
        misuse(argv[2]);
        return 3;
#ifdef __GLIBC__
    } else if (strcmp(mode, "suspended") == 0) {
        suspended();
#endif
    } else {
        fprintf(stderr,
                "usage: %s table | threads T N | closures N | abandon N | handed-on | suspended | "
                "concurrent T N [no-fork] | misuse CASE\n",
                argv[0]);
        return 2;
    }
    printf("checks=%d\nresult=ok\n", checks);
    return 0;
}
