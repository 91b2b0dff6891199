/* Callbacks made while a thread or the process is being torn down.
 *
 *   teardown FIXTURE keys THREADS   threads calling back from a pthread key
 *                                   destructor created before callgate's
 *                                   key, one created after it, and a
 *                                   thread_local destructor
 *                                   (__cxa_thread_atexit_impl, what C++ uses)
 *   teardown FIXTURE last-round N   N threads whose *first* call happens in
 *                                   the last round of key destructors
 *   teardown FIXTURE exit bound|unbound
 *                                   calls from an atexit handler and from a
 *                                   __attribute__((destructor)) at exit, the
 *                                   main thread bound before exit or not
 *   teardown FIXTURE no-key THREADS THREADS threads calling back after the
 *                                   process used up every pthread key, so
 *                                   callgate cannot create its own
 *
 * Each call from a destructor checks a plain call, a #[local] call, an Err
 * and a caught panic. glibc runs thread_local destructors first, then key
 * destructors in key order, repeating rounds while values are set again (up
 * to PTHREAD_DESTRUCTOR_ITERATIONS). */
#include "fixture_host.h"

#include <limits.h>
#include <stdatomic.h>

static fixture lib;
static int loaded;

/* What one round of teardown calls saw: 1 if every check passed. The
 * token is not compared between calls: once a thread's context has been
 * released, each call is served by whichever context is free. */
static int teardown_calls_work(void) {
    if (lib.token() <= 0) return 0;
    if (lib.work(1) != 2) return 0;
    if (lib.plain_per_call(2) != 3) return 0;
    if (lib.fail(9) != -1) return 0;
    if (lib.panic(1) != -2) return 0;
    return 1;
}

/* --- key and thread_local destructors --------------------------------------- */

enum kind {
    BOUND_FIRST,      /* binds in its body; every destructor calls back */
    FIRST_IN_EARLY,   /* first call in the early key's destructor */
    FIRST_IN_LATE,    /* first call in the late key's destructor */
    FIRST_IN_TLS,     /* first call in a thread_local destructor */
    EVERY_LATE_ROUND, /* binds; the late destructor re-arms and calls each round */
    KINDS
};

static pthread_key_t early_key, late_key;
static atomic_long ok_calls[KINDS], bad_calls[KINDS];

#ifdef __GLIBC__
extern void *__dso_handle;
extern int __cxa_thread_atexit_impl(void (*dtor)(void *), void *obj, void *dso);
#else
/* musl has no __cxa_thread_atexit_impl: the C++ runtimes there register a
 * thread_local destructor with a pthread key of their own. This key stands
 * for it, made first, so its destructor runs before the other keys', as
 * glibc runs thread_local destructors first. */
static pthread_key_t tls_key;
#endif

static void record(long kind) {
    if (teardown_calls_work())
        atomic_fetch_add(&ok_calls[kind], 1);
    else
        atomic_fetch_add(&bad_calls[kind], 1);
}

/* Values are `kind + 1` (non-NULL). */
static void early_destructor(void *value) {
    long kind = (long)(intptr_t)value - 1;
    if (kind == BOUND_FIRST || kind == FIRST_IN_EARLY) record(kind);
}

static void late_destructor(void *value) {
    long kind = (long)(intptr_t)value - 1;
    if (kind == BOUND_FIRST || kind == FIRST_IN_LATE) record(kind);
    if (kind == EVERY_LATE_ROUND) {
        record(kind);
        /* Keep the thread in the destructor loop for every round glibc runs. */
        pthread_setspecific(late_key, value);
    }
}

static void tls_destructor(void *value) {
    long kind = (long)(intptr_t)value - 1;
    record(kind);
}

static void *teardown_worker(void *raw) {
    long kind = (long)(intptr_t)raw;
    void *value = (void *)(intptr_t)(kind + 1);
    if (kind == BOUND_FIRST || kind == EVERY_LATE_ROUND) {
        if (!teardown_calls_work()) atomic_fetch_add(&bad_calls[kind], 1);
    }
    pthread_setspecific(early_key, value);
    pthread_setspecific(late_key, value);
    if (kind == BOUND_FIRST || kind == FIRST_IN_TLS) {
#ifdef __GLIBC__
        __cxa_thread_atexit_impl(tls_destructor, value, &__dso_handle);
#else
        pthread_setspecific(tls_key, value);
#endif
    }
    return NULL;
}

static void *bind_once(void *raw) {
    (void)raw;
    CHECK(lib.work(0) == 1, "warm-up call failed");
    return NULL;
}

static void keys(int threads) {
#ifndef __GLIBC__
    CHECK(pthread_key_create(&tls_key, tls_destructor) == 0, "pthread_key_create");
#endif
    /* Made before the fixture is loaded, so before callgate's key. */
    CHECK(pthread_key_create(&early_key, early_destructor) == 0, "pthread_key_create");
    fixture_open(&lib, getenv("TEARDOWN_FIXTURE"), RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    /* callgate's key exists once a thread has bound. */
    fixture_join(fixture_spawn(bind_once, NULL, 0));
    CHECK(pthread_key_create(&late_key, late_destructor) == 0, "pthread_key_create");
    CHECK(early_key < late_key, "keys out of order");
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);

    const int wave = 8;
    pthread_t ids[8];
    for (int done = 0; done < threads; done += wave) {
        int n = threads - done < wave ? threads - done : wave;
        for (int i = 0; i < n; i++)
            ids[i] = fixture_spawn(teardown_worker, (void *)(intptr_t)((done + i) % KINDS), 0);
        for (int i = 0; i < n; i++) fixture_join(ids[i]);
        fixture_stats_t now = fixture_snapshot(&lib);
        CHECK(now.contexts_bound == 0,
              "%" PRIu64 " contexts still bound after joining the wave at %d",
              now.contexts_bound, done);
    }
    fixture_stats_t after = fixture_snapshot(&lib);
    long per_kind = threads / KINDS;
    /* Calls per thread of each kind: early + late + tls / early / late /
     * tls / one per destructor round. */
    const long expected[KINDS] = {3, 1, 1, 1, PTHREAD_DESTRUCTOR_ITERATIONS};
    static const char *names[KINDS] = {"bound_first", "first_in_early", "first_in_late",
                                       "first_in_tls", "every_late_round"};
    for (int kind = 0; kind < KINDS; kind++) {
        printf("%s_ok=%ld\n%s_bad=%ld\n", names[kind], atomic_load(&ok_calls[kind]), names[kind],
               atomic_load(&bad_calls[kind]));
        CHECK(atomic_load(&bad_calls[kind]) == 0, "%s: %ld teardown calls failed", names[kind],
              atomic_load(&bad_calls[kind]));
        CHECK(atomic_load(&ok_calls[kind]) == per_kind * expected[kind],
              "%s: %ld teardown calls ran, expected %ld", names[kind],
              atomic_load(&ok_calls[kind]), per_kind * expected[kind]);
    }
    uint64_t created = after.contexts_created - before.contexts_created;
    printf("contexts_created_during_run=%" PRIu64 "\n", created);
    fixture_print_stats("", &after);
    CHECK(after.contexts_bound == 0, "%" PRIu64 " contexts bound at the end",
          after.contexts_bound);
    CHECK(after.binds - before.binds == after.releases - before.releases,
          "%" PRIu64 " binds but %" PRIu64 " releases", after.binds - before.binds,
          after.releases - before.releases);
    CHECK(after.token_binds == after.token_releases, "Token bind/release %" PRIu64 "/%" PRIu64,
          after.token_binds, after.token_releases);
    /* At most `wave` threads alive, each with one context at a time, plus
     * the per-call attachments of exiting threads. */
    CHECK(created <= 2 * (uint64_t)wave + 2, "%" PRIu64 " contexts created", created);
    CHECK(after.contexts_free == after.contexts_created, "free %" PRIu64 " != created %" PRIu64,
          after.contexts_free, after.contexts_created);
}

/* --- first call in the last destructor round -------------------------------- */

static atomic_long last_round_calls;

static void last_round_destructor(void *value) {
    intptr_t round = (intptr_t)value;
    if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
        pthread_setspecific(late_key, (void *)(round + 1));
        return;
    }
    if (teardown_calls_work()) atomic_fetch_add(&last_round_calls, 1);
}

static void *last_round_worker(void *raw) {
    (void)raw;
    pthread_setspecific(late_key, (void *)(intptr_t)1);
    return NULL;
}

static void last_round(int threads) {
    fixture_open(&lib, getenv("TEARDOWN_FIXTURE"), RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    fixture_join(fixture_spawn(bind_once, NULL, 0));
    CHECK(pthread_key_create(&late_key, last_round_destructor) == 0, "pthread_key_create");
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    for (int i = 0; i < threads; i++) fixture_join(fixture_spawn(last_round_worker, NULL, 0));
    fixture_stats_t after = fixture_snapshot(&lib);
    printf("last_round_calls=%ld\n", atomic_load(&last_round_calls));
    printf("contexts_created_during_run=%" PRIu64 "\n",
           after.contexts_created - before.contexts_created);
    fixture_print_stats("", &after);
    CHECK(atomic_load(&last_round_calls) == threads, "%ld of %d calls worked",
          atomic_load(&last_round_calls), threads);
    CHECK(after.contexts_bound == 0,
          "%" PRIu64 " contexts stay bound to threads that exited (their first call came "
          "in the last destructor round, after which glibc runs no destructor)",
          after.contexts_bound);
}

/* --- atexit and destructors -------------------------------------------------- */

static int exit_checks_run;

/* Calls from exit-time code; exits 3 (not 0) if anything failed, since the
 * exit status is all an atexit handler can still change. */
static void *exit_thread(void *raw) {
    (void)raw;
    return (void *)(intptr_t)teardown_calls_work();
}

static void exit_time_calls(const char *where) {
    if (!loaded) return;
    int ok = teardown_calls_work();
    char message[256];
    lib.clear_last_error();
    ok = ok && lib.fail(4) == -1;
    /* The main thread's Rust thread-locals are destroyed by exit() before
     * atexit handlers run, so the last error may be unavailable here. */
    int has_message = lib.last_error_message(message, sizeof message) >= 0;
    ok = ok && lib.nest(16, NULL) == -1;
    /* A thread created at exit binds and releases normally. */
    pthread_t id = fixture_spawn(exit_thread, NULL, 0);
    void *thread_ok = NULL;
    pthread_join(id, &thread_ok);
    ok = ok && thread_ok != NULL;
    printf("%s_ok=%d\n%s_last_error=%s\n", where, ok, where,
           has_message ? message : "(unavailable)");
    fflush(stdout);
    exit_checks_run++;
    if (!ok) {
        fprintf(stderr, "FAIL: a callback from %s failed\n", where);
        _exit(3);
    }
}

static void at_exit_handler(void) {
    exit_time_calls("atexit");
}

__attribute__((destructor)) static void host_destructor(void) {
    exit_time_calls("destructor");
    if (loaded && exit_checks_run != 2) {
        fprintf(stderr, "FAIL: the atexit handler did not run first\n");
        _exit(4);
    }
}

static void at_exit(const char *how) {
    fixture_open(&lib, getenv("TEARDOWN_FIXTURE"), RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    loaded = 1;
    CHECK(atexit(at_exit_handler) == 0, "atexit");
    if (strcmp(how, "bound") == 0) CHECK(teardown_calls_work(), "main thread calls failed");
    printf("result=ok\n");
    fflush(stdout);
    /* exit() runs the atexit handler, then the destructors. */
}

/* --- no pthread key left -------------------------------------------------- */

enum { NO_KEY_ROUNDS = 100 };

static atomic_long no_key_ok, no_key_bad;

/* Every kind of call, NO_KEY_ROUNDS times, each Err followed by a read of
 * its last error. */
static void *no_key_worker(void *raw) {
    (void)raw;
    for (int i = 0; i < NO_KEY_ROUNDS; i++) {
        char message[256];
        lib.clear_last_error();
        int ok = teardown_calls_work() && lib.plain(i) == i + 1 && lib.fail(7) == -1 &&
                 lib.last_error_message(message, sizeof message) > 0 &&
                 strstr(message, "7") != NULL;
        atomic_fetch_add(ok ? &no_key_ok : &no_key_bad, 1);
    }
    return NULL;
}

static void no_key(int threads) {
    /* callgate creates its key on a thread's first call, which the
     * fixture's init makes (it sorts with a callback): take every key
     * before the fixture is loaded. */
    long taken = 0;
    pthread_key_t key;
    while (pthread_key_create(&key, NULL) == 0) taken++;
    printf("keys_taken=%ld\n", taken);
    fflush(stdout);
    fixture_open(&lib, getenv("TEARDOWN_FIXTURE"), RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");

    const int wave = 8;
    pthread_t ids[8];
    for (int done = 0; done < threads; done += wave) {
        int n = threads - done < wave ? threads - done : wave;
        for (int i = 0; i < n; i++) ids[i] = fixture_spawn(no_key_worker, NULL, 0);
        for (int i = 0; i < n; i++) fixture_join(ids[i]);
    }
    /* The main thread too. */
    no_key_worker(NULL);
    fixture_stats_t after = fixture_snapshot(&lib);
    printf("rounds_ok=%ld\nrounds_bad=%ld\n", atomic_load(&no_key_ok), atomic_load(&no_key_bad));
    fixture_print_stats("", &after);
    CHECK(atomic_load(&no_key_bad) == 0, "%ld rounds of calls failed", atomic_load(&no_key_bad));
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    setenv("TEARDOWN_FIXTURE", path, 1);
    const char *mode = argc > 2 ? argv[2] : "keys";
    if (strcmp(mode, "keys") == 0) {
        keys(argc > 3 ? atoi(argv[3]) : 1000);
    } else if (strcmp(mode, "last-round") == 0) {
        last_round(argc > 3 ? atoi(argv[3]) : 16);
    } else if (strcmp(mode, "no-key") == 0) {
        no_key(argc > 3 ? atoi(argv[3]) : 64);
    } else if (strcmp(mode, "exit") == 0) {
        at_exit(argc > 3 ? argv[3] : "bound");
        return 0;
    } else {
        FAIL("unknown mode %s", mode);
    }
    printf("result=ok\n");
    return 0;
}
