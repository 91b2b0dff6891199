/* dlclose() of the fixture while threads bound to it are alive, then a
 * reload.
 *
 *   dlclose FIXTURE live ROUNDS   each round: load, bind 8 threads, dlclose
 *                                 while they are alive, let them exit (their
 *                                 key destructors run in the fixture), load
 *                                 again and call from new threads
 *   dlclose FIXTURE unbound ROUNDS [require-unload]
 *                                 (FIXTURE_INIT=none) only per-call callbacks
 *                                 from threads that exit before dlclose, so
 *                                 callgate does not pin the library; each
 *                                 reload works (from scratch when the library
 *                                 really was unloaded). With require-unload,
 *                                 fails unless every dlclose unloaded it.
 *                                 glibc never reuses the static TLS of an
 *                                 unloaded library, so after a few rounds
 *                                 the fixture's TLS block is in dynamic TLS;
 *                                 reports in how many rounds, and how many
 *                                 calls of malloc (the resolver allocating a
 *                                 thread's block) had a misaligned stack. */
#include "fixture_host.h"
#include "malloc_check.h"

#include <stdatomic.h>

#define THREADS 8

static const char *path;
static fixture lib;

static atomic_int bound_count;
static atomic_int go;

typedef struct {
    int index;
    int ok;
} worker;

static void *bound_worker(void *raw) {
    worker *w = raw;
    w->ok = lib.token() > 0 && lib.work(w->index) == w->index + 1;
    atomic_fetch_add(&bound_count, 1);
    /* Stay alive (bound) until the library has been dlclose()d. */
    while (!atomic_load(&go)) fixture_sleep_ms(1);
    /* Exits without touching the fixture: the key destructor that releases
     * the context runs inside the dlclose()d library. */
    return NULL;
}

static atomic_int dynamic_tls_calls;

/* The first call of a new thread into the fixture: where the fixture's TLS
 * block is in dynamic TLS, it makes the resolver allocate the thread's. */
static void *per_call_worker(void *raw) {
    worker *w = raw;
    w->ok = lib.plain_per_call(w->index) == w->index + 1 && lib.token_per_call() > 0;
    void *block = NULL;
    if (dlinfo(lib.handle, RTLD_DI_TLS_DATA, &block) == 0 && block != NULL &&
        !fixture_in_static_tls(block))
        atomic_fetch_add(&dynamic_tls_calls, 1);
    return NULL;
}

static int still_loaded(void) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (!handle) return 0;
    dlclose(handle);
    return 1;
}

static void live(int rounds) {
    int pinned = 0;
    for (int round = 0; round < rounds; round++) {
        fixture_open(&lib, path, RTLD_NOW | RTLD_LOCAL);
        CHECK(fixture_wait_init(&lib, 30) == 0, "round %d: init not ready", round);
        /* The init's thread bound itself for its callback and ends soon
         * after the init: wait for that, or a slow machine counts its
         * context among those bound before the round. */
        fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
        CHECK(before.contexts_bound == 0, "round %d: %" PRIu64 " contexts bound before it",
              round, before.contexts_bound);
        atomic_store(&bound_count, 0);
        atomic_store(&go, 0);
        worker workers[THREADS];
        pthread_t ids[THREADS];
        for (int i = 0; i < THREADS; i++) {
            workers[i] = (worker){.index = i};
            ids[i] = fixture_spawn(bound_worker, &workers[i], 0);
        }
        double deadline = fixture_now() + 20;
        while (atomic_load(&bound_count) < THREADS && fixture_now() < deadline)
            fixture_sleep_ms(1);
        CHECK(atomic_load(&bound_count) == THREADS, "round %d: threads did not bind", round);
        fixture_stats_t bound = fixture_snapshot(&lib);
        CHECK(bound.contexts_bound >= THREADS, "round %d: %" PRIu64 " bound", round,
              bound.contexts_bound);
        CHECK(dlclose(lib.handle) == 0, "round %d: dlclose: %s", round, dlerror());
        /* Bound threads pin the library (RTLD_NODELETE): still mapped. */
        pinned += still_loaded();
        atomic_store(&go, 1);
        for (int i = 0; i < THREADS; i++) {
            fixture_join(ids[i]);
            CHECK(workers[i].ok, "round %d: thread %d failed", round, i);
        }
        /* Load again: works, and the exited threads' contexts came back. */
        fixture_open(&lib, path, RTLD_NOW | RTLD_LOCAL);
        CHECK(fixture_wait_init(&lib, 30) == 0, "round %d: init not ready after reload", round);
        fixture_stats_t reloaded = fixture_wait_bound(&lib, before.contexts_bound, 10);
        CHECK(reloaded.contexts_bound == before.contexts_bound,
              "round %d: %" PRIu64 " contexts bound after the threads exited (was %" PRIu64 ")",
              round, reloaded.contexts_bound, before.contexts_bound);
        for (int i = 0; i < THREADS; i++) {
            workers[i] = (worker){.index = i};
            ids[i] = fixture_spawn(per_call_worker, &workers[i], 0);
        }
        for (int i = 0; i < THREADS; i++) {
            fixture_join(ids[i]);
            CHECK(workers[i].ok, "round %d: call after reload failed", round);
        }
        fixture_stats_t after = fixture_snapshot(&lib);
        CHECK(after.contexts_created <= 2 * THREADS + 2,
              "%" PRIu64 " contexts created over %d rounds", after.contexts_created, round + 1);
        CHECK(dlclose(lib.handle) == 0, "dlclose: %s", dlerror());
    }
    printf("rounds=%d\npinned_rounds=%d\n", rounds, pinned);
    CHECK(pinned == rounds, "the library was unmapped under %d rounds of bound threads",
          rounds - pinned);
}

static void unbound(int rounds, int require_unload) {
    int unloaded = 0, was_unloaded = 1;
    for (int round = 0; round < rounds; round++) {
        fixture_open(&lib, path, RTLD_NOW | RTLD_LOCAL);
        CHECK(fixture_wait_init(&lib, 30) == 0, "round %d: init not ready", round);
        fixture_stats_t start = fixture_snapshot(&lib);
        CHECK(!was_unloaded || (start.contexts_created == 0 && start.binds == 0),
              "round %d: a reload after an unload kept state (%" PRIu64 " contexts)", round,
              start.contexts_created);
        worker workers[THREADS];
        pthread_t ids[THREADS];
        for (int i = 0; i < THREADS; i++) {
            workers[i] = (worker){.index = i};
            ids[i] = fixture_spawn(per_call_worker, &workers[i], 0);
        }
        for (int i = 0; i < THREADS; i++) {
            fixture_join(ids[i]);
            CHECK(workers[i].ok, "round %d: per-call thread %d failed", round, i);
        }
        fixture_stats_t after = fixture_snapshot(&lib);
        CHECK(after.contexts_bound == 0, "round %d: %" PRIu64 " bound", round,
              after.contexts_bound);
        CHECK(dlclose(lib.handle) == 0, "dlclose: %s", dlerror());
        /* The detached init thread may still be finishing its exit. */
        double deadline = fixture_now() + 0.2;
        while (still_loaded() && fixture_now() < deadline) fixture_sleep_ms(1);
        was_unloaded = !still_loaded();
        unloaded += was_unloaded;
    }
    printf("rounds=%d\nunloaded_rounds=%d\n", rounds, unloaded);
    printf("dynamic_tls_threads=%d\nmalloc_checked=%d\nmisaligned_mallocs=%ld\n",
           atomic_load(&dynamic_tls_calls), MALLOC_CHECKED, malloc_misaligned());
    CHECK(!require_unload || unloaded == rounds, "the library stayed loaded in %d of %d rounds",
          rounds - unloaded, rounds);
}

int main(int argc, char **argv) {
    path = fixture_path_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "live";
    int rounds = argc > 3 ? atoi(argv[3]) : 3;
    if (strcmp(mode, "live") == 0) {
        live(rounds);
    } else if (strcmp(mode, "unbound") == 0) {
        unbound(rounds, argc > 4 && strcmp(argv[4], "require-unload") == 0);
    } else {
        FAIL("unknown mode %s", mode);
    }
    printf("result=ok\n");
    return 0;
}
