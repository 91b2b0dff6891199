/* Signal storms while threads make their first calls (bind) or wait for
 * the init, and the caller's signal mask across calls.
 *
 *   signals FIXTURE binds THREADS   THREADS threads in waves of 50 make their
 *                                   first calls under a SIGUSR1 (pthread_kill)
 *                                   and SIGPROF (ITIMER_PROF) storm
 *   signals FIXTURE reentrant-binds THREADS
 *                                   the same, but SIGUSR1's handler calls
 *                                   back (`plain`), so a handler may make a
 *                                   thread's first call while that thread is
 *                                   inside its own first bind; a first wave
 *                                   without handler calls fills the free
 *                                   list, so no bind under the storm needs
 *                                   malloc (which a handler must not enter)
 *   signals FIXTURE reentrant-per-call THREADS
 *                                   THREADS threads that never bind make
 *                                   1 000 `attach = per_call` calls each
 *                                   under the storm, and SIGUSR1's handler
 *                                   makes one too: the handler may run
 *                                   while the interrupted call takes the
 *                                   thread's cached context, runs on it, or
 *                                   caches it again (after a first wave
 *                                   that fills the free list, as above)
 *   signals FIXTURE per-call-first THREADS
 *                                   THREADS threads make `attach = per_call`
 *                                   calls (`plain_per_call`) from their
 *                                   first call on, until SIGUSR1's handler
 *                                   has called back on the thread with a
 *                                   #[local]: per call (`token_per_call`)
 *                                   16 times, then bound (`token`). A
 *                                   handler's call may find the per-call
 *                                   context between the interrupted
 *                                   call's attach and its entry, or its
 *                                   return and its release, or bind the
 *                                   thread while that call attaches; after
 *                                   the threads exit nothing stays bound,
 *                                   and every `Token::bind` was released
 *                                   (after a first batch of threads that
 *                                   fills the free list, as above)
 *   signals FIXTURE gate THREADS    (FIXTURE_INIT=slow) THREADS threads are
 *                                   stormed while they wait at the init gate
 *
 * SIGUSR1's handler is installed without SA_RESTART, so interrupted system
 * calls see EINTR. Each worker blocks a different set of signals before
 * calling and checks the mask is exactly the same after every call. */
#include "fixture_host.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/time.h>

#define WAVE 50

static fixture lib;
static atomic_long usr1_handled, prof_handled, handler_calls;
static atomic_int call_from_handler, wrong_results;

/* How many times SIGUSR1's handler called back on this thread. */
static _Thread_local volatile sig_atomic_t handler_calls_here;

/* In mode 3, the handler's first calls on a thread are per call, this
 * many, then bound: a bound call binds the thread, which ends what the
 * mode looks at, and per-call ones (with a #[local]: not ready, so the
 * slow path) can come again and again before that. */
enum { PER_CALL_FROM_HANDLER = 16 };

/* 1: the handler calls `plain`; 2: it calls `plain_per_call`; 3: it
 * calls `token_per_call`, then `token` (see PER_CALL_FROM_HANDLER). */
static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&usr1_handled, 1);
    int mode = atomic_load(&call_from_handler);
    if (mode == 3) {
        int64_t token = handler_calls_here < PER_CALL_FROM_HANDLER ? lib.token_per_call()
                                                                   : lib.token();
        if (token <= 0) atomic_fetch_add(&wrong_results, 1);
    } else if (mode != 0) {
        int32_t got = mode == 1 ? lib.plain(1) : lib.plain_per_call(1);
        if (got != 2) atomic_fetch_add(&wrong_results, 1);
    }
    if (mode != 0) {
        handler_calls_here = handler_calls_here + 1;
        atomic_fetch_add(&handler_calls, 1);
    }
}

static void on_prof(int sig) {
    (void)sig;
    atomic_fetch_add(&prof_handled, 1);
}

static void install(int sig, void (*handler)(int), int flags) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = flags;
    sigemptyset(&action.sa_mask);
    CHECK(sigaction(sig, &action, NULL) == 0, "sigaction: %s", strerror(errno));
}

static void prof_timer(long interval_us) {
    struct itimerval timer = {{0, interval_us}, {0, interval_us}};
    CHECK(setitimer(ITIMER_PROF, &timer, NULL) == 0, "setitimer: %s", strerror(errno));
}

static int same_mask(const sigset_t *a, const sigset_t *b) {
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(a, sig) != sigismember(b, sig)) return 0;
    return 1;
}

/* Blocks a different set per worker: nothing extra, SIGUSR2 + SIGPROF, or
 * SIGUSR1 (that worker is then only hit by SIGPROF). */
static void choose_mask(int index, sigset_t *mask) {
    sigemptyset(mask);
    if (index % 3 == 1) {
        sigaddset(mask, SIGUSR2);
        sigaddset(mask, SIGPROF);
    } else if (index % 3 == 2) {
        sigaddset(mask, SIGUSR1);
    }
    CHECK(pthread_sigmask(SIG_SETMASK, mask, NULL) == 0, "pthread_sigmask");
    CHECK(pthread_sigmask(SIG_SETMASK, NULL, mask) == 0, "pthread_sigmask");
}

static atomic_int mask_changes, calls_done;

/* Makes a call and checks the mask did not change. */
#define CALL_KEEPS_MASK(call, expected)                                  \
    do {                                                                 \
        if ((call) != (expected)) atomic_fetch_add(&wrong_results, 1);  \
        sigset_t after;                                                  \
        pthread_sigmask(SIG_SETMASK, NULL, &after);                     \
        if (!same_mask(&before, &after)) atomic_fetch_add(&mask_changes, 1); \
    } while (0)

typedef struct {
    int index;
    pthread_barrier_t *start, *hold;
} worker;

static void *first_calls(void *raw) {
    worker *w = raw;
    sigset_t before;
    choose_mask(w->index, &before);
    pthread_barrier_wait(w->start);
    int64_t token = lib.token(); /* the first call: binds under the storm */
    if (token <= 0) atomic_fetch_add(&wrong_results, 1);
    sigset_t after;
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    if (!same_mask(&before, &after)) atomic_fetch_add(&mask_changes, 1);
    CALL_KEEPS_MASK(lib.work(w->index), w->index + 1);
    CALL_KEEPS_MASK(lib.plain_per_call(w->index), w->index + 1);
    CALL_KEEPS_MASK(lib.fail(1), -1);
    CALL_KEEPS_MASK(lib.token(), token);
    atomic_fetch_add(&calls_done, 1);
    pthread_barrier_wait(w->hold);
    return NULL;
}

enum { PER_CALL_CALLS = 1000 };

/* Never binds: every call attaches per call, from the thread's cache after
 * the first. */
static void *per_call_calls(void *raw) {
    worker *w = raw;
    sigset_t before;
    choose_mask(w->index, &before);
    pthread_barrier_wait(w->start);
    for (int i = 0; i < PER_CALL_CALLS; i++) {
        CALL_KEEPS_MASK(lib.plain_per_call(i), i + 1);
    }
    atomic_fetch_add(&calls_done, 1);
    pthread_barrier_wait(w->hold);
    return NULL;
}

static long storm_waves(int threads, void *(*work)(void *));

/* Prints the counts every storm checks, and checks them: every call
 * returned the right value and kept the caller's mask. */
static void check_calls(void) {
    printf("mask_changes=%d\nwrong_results=%d\n", atomic_load(&mask_changes),
           atomic_load(&wrong_results));
    CHECK(atomic_load(&wrong_results) == 0, "%d calls returned a wrong value",
          atomic_load(&wrong_results));
    CHECK(atomic_load(&mask_changes) == 0, "%d calls changed the caller's signal mask",
          atomic_load(&mask_changes));
}

static void per_call(int threads) {
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    /* Fill the free list, then let the handler call back. */
    storm_waves(WAVE, first_calls);
    atomic_store(&call_from_handler, 2);
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    long kills = storm_waves(threads, per_call_calls);
    atomic_store(&call_from_handler, 0);
    fixture_stats_t after = fixture_wait_bound(&lib, 0, 10);
    printf("threads=%d\nkills_sent=%ld\nhandler_calls=%ld\n", threads, kills,
           atomic_load(&handler_calls));
    printf("contexts_created_during_run=%" PRIu64 "\n",
           after.contexts_created - before.contexts_created);
    fixture_print_stats("", &after);
    check_calls();
    CHECK(atomic_load(&handler_calls) > 0, "no handler called back");
    CHECK(after.contexts_bound == 0, "%" PRIu64 " contexts bound at the end",
          after.contexts_bound);
    /* Every attach is released: as many releases as binds. */
    CHECK(after.binds - before.binds == after.releases - before.releases,
          "%" PRIu64 " attaches but %" PRIu64 " releases", after.binds - before.binds,
          after.releases - before.releases);
}

/* Makes `attach = per_call` calls, the thread's first calls, until
 * SIGUSR1's handler has made its bound call on the thread (or for 10
 * seconds). They take no #[local]: a handler's call that interrupts a
 * callback looking one up is beyond what callgate supports (the guide's
 * Known limits), and the handler's calls take one. SIGUSR1 is never
 * blocked here. */
static atomic_int threads_called_back;

static void *per_call_first_calls(void *raw) {
    worker *w = raw;
    sigset_t before;
    choose_mask(w->index % 2, &before);
    pthread_barrier_wait(w->start);
    double deadline = fixture_now() + 10;
    for (unsigned i = 0; handler_calls_here <= PER_CALL_FROM_HANDLER; i++) {
        int32_t value = (int32_t)(i % 1024);
        CALL_KEEPS_MASK(lib.plain_per_call(value), value + 1);
        if (i % 1024 == 0 && fixture_now() > deadline) break;
    }
    if (handler_calls_here > PER_CALL_FROM_HANDLER) atomic_fetch_add(&threads_called_back, 1);
    atomic_fetch_add(&calls_done, 1);
    pthread_barrier_wait(w->hold);
    return NULL;
}

/* Binds a context (with its `Token`) and holds it until every thread of
 * the batch has one. */
static void *bind_and_hold(void *raw) {
    worker *w = raw;
    if (lib.token() <= 0) atomic_fetch_add(&wrong_results, 1);
    pthread_barrier_wait(w->hold);
    return NULL;
}

/* Threads that hold a context each at once, to fill the free list: a
 * worker of `per_call_first` takes at most two (its per-call context and
 * one for the handler's call), WAVE workers run at once. */
enum { FILL = 3 * WAVE };

static void per_call_first(int threads) {
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    /* FILL contexts, each with a `Token`, so that no call under the storm
     * needs malloc. */
    worker fillers[FILL];
    pthread_t ids[FILL];
    pthread_barrier_t hold;
    pthread_barrier_init(&hold, NULL, FILL);
    for (int i = 0; i < FILL; i++) {
        fillers[i] = (worker){.index = i, .hold = &hold};
        ids[i] = fixture_spawn(bind_and_hold, &fillers[i], 256 * 1024);
    }
    for (int i = 0; i < FILL; i++) fixture_join(ids[i]);
    pthread_barrier_destroy(&hold);
    atomic_store(&call_from_handler, 3);
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    long kills = storm_waves(threads, per_call_first_calls);
    atomic_store(&call_from_handler, 0);
    fixture_stats_t after = fixture_wait_bound(&lib, 0, 10);
    uint64_t binds = after.binds - before.binds, releases = after.releases - before.releases;
    uint64_t token_binds = after.token_binds - before.token_binds;
    uint64_t token_releases = after.token_releases - before.token_releases;
    printf("threads=%d\nkills_sent=%ld\nhandler_calls=%ld\nthreads_called_back=%d\n", threads,
           kills, atomic_load(&handler_calls), atomic_load(&threads_called_back));
    printf("contexts_created_during_run=%" PRIu64 "\n",
           after.contexts_created - before.contexts_created);
    printf("binds_during_run=%" PRIu64 "\nreleases_during_run=%" PRIu64 "\n", binds, releases);
    printf("token_binds_during_run=%" PRIu64 "\ntoken_releases_during_run=%" PRIu64 "\n",
           token_binds, token_releases);
    fixture_print_stats("", &after);
    check_calls();
    CHECK(atomic_load(&threads_called_back) == threads,
          "the handler made its bound call on %d threads of %d",
          atomic_load(&threads_called_back), threads);
    CHECK(after.contexts_bound == 0, "%" PRIu64 " contexts bound after the threads exited",
          after.contexts_bound);
    CHECK(binds == releases, "%" PRIu64 " attaches but %" PRIu64 " releases", binds, releases);
    CHECK(token_binds == token_releases,
          "Token::bind ran %" PRIu64 " times but Token::release %" PRIu64 " times", token_binds,
          token_releases);
}

static void binds(int threads, int reentrant) {
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    if (reentrant) {
        /* Fill the free list, then let the handler call back. */
        storm_waves(WAVE, first_calls);
        atomic_store(&call_from_handler, 1);
    }
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    double started = fixture_now();
    long kills = storm_waves(threads, first_calls);
    atomic_store(&call_from_handler, 0);
    double elapsed = fixture_now() - started;
    fixture_stats_t after = fixture_wait_bound(&lib, 0, 10);
    printf("threads=%d\nseconds=%.3f\nkills_sent=%ld\n", threads, elapsed, kills);
    printf("sigusr1_handled=%ld\nsigprof_handled=%ld\nhandler_calls=%ld\n",
           atomic_load(&usr1_handled), atomic_load(&prof_handled), atomic_load(&handler_calls));
    fixture_print_stats("", &after);
    check_calls();
    CHECK(atomic_load(&usr1_handled) > 0, "no SIGUSR1 was handled: no storm");
    CHECK(!reentrant || atomic_load(&handler_calls) > 0, "no handler called back");
    CHECK(after.binds - before.binds == (uint64_t)threads, "%" PRIu64 " binds for %d threads",
          after.binds - before.binds, threads);
    CHECK(after.contexts_bound == 0, "%" PRIu64 " contexts bound at the end",
          after.contexts_bound);
}

/* THREADS threads in waves of WAVE run `work` (their first calls, say)
 * under the storm; returns how many signals were sent. */
static long storm_waves(int threads, void *(*work)(void *)) {
    prof_timer(200);
    worker workers[WAVE];
    pthread_t ids[WAVE];
    long kills = 0;
    for (int done = 0; done < threads; done += WAVE) {
        int n = threads - done < WAVE ? threads - done : WAVE;
        pthread_barrier_t start, hold;
        /* Workers start their first calls together; the main thread takes
         * part in the hold barrier, so workers stay alive (safe to
         * pthread_kill) until it stops signalling. */
        pthread_barrier_init(&start, NULL, (unsigned)n);
        pthread_barrier_init(&hold, NULL, (unsigned)n + 1);
        atomic_store(&calls_done, 0);
        for (int i = 0; i < n; i++) {
            workers[i] = (worker){.index = done + i, .start = &start, .hold = &hold};
            ids[i] = fixture_spawn(work, &workers[i], 256 * 1024);
            for (int j = 0; j <= i; j++, kills++) pthread_kill(ids[j], SIGUSR1);
        }
        double deadline = fixture_now() + 30;
        while (atomic_load(&calls_done) < n) {
            for (int i = 0; i < n; i++, kills++) pthread_kill(ids[i], SIGUSR1);
            CHECK(fixture_now() < deadline, "wave at %d: calls did not finish (deadlock?)", done);
        }
        pthread_barrier_wait(&hold);
        for (int i = 0; i < n; i++) fixture_join(ids[i]);
        pthread_barrier_destroy(&start);
        pthread_barrier_destroy(&hold);
    }
    prof_timer(0);
    return kills;
}

/* --- storm at the gate ----------------------------------------------------- */

static void *wait_at_gate(void *raw) {
    worker *w = raw;
    sigset_t before;
    choose_mask(w->index, &before);
    CALL_KEEPS_MASK(lib.work(w->index), w->index + 1);
    atomic_fetch_add(&calls_done, 1);
    pthread_barrier_wait(w->hold);
    return NULL;
}

static void gate(int threads) {
    CHECK(lib.init_state(NULL, 0) == 1, "the slow init is not pending");
    CHECK(threads <= WAVE, "at most %d gate threads", WAVE);
    worker workers[WAVE];
    pthread_t ids[WAVE];
    pthread_barrier_t hold;
    pthread_barrier_init(&hold, NULL, (unsigned)threads + 1);
    prof_timer(200);
    for (int i = 0; i < threads; i++) {
        workers[i] = (worker){.index = i, .hold = &hold};
        ids[i] = fixture_spawn(wait_at_gate, &workers[i], 0);
    }
    /* Storm the waiters for a while, then let the init finish mid-storm. */
    double started = fixture_now();
    long kills = 0;
    while (fixture_now() - started < 0.3) {
        for (int i = 0; i < threads; i++, kills++) pthread_kill(ids[i], SIGUSR1);
        fixture_sleep_ms(1);
    }
    fixture_stats_t waiting = fixture_snapshot(&lib);
    CHECK(atomic_load(&calls_done) == 0, "%d calls passed the gate early (a signal woke them?)",
          atomic_load(&calls_done));
    lib.finish_init();
    double deadline = fixture_now() + 30;
    while (atomic_load(&calls_done) < threads) {
        for (int i = 0; i < threads; i++, kills++) pthread_kill(ids[i], SIGUSR1);
        CHECK(fixture_now() < deadline, "waiters did not get through (deadlock?)");
    }
    pthread_barrier_wait(&hold);
    for (int i = 0; i < threads; i++) fixture_join(ids[i]);
    pthread_barrier_destroy(&hold);
    prof_timer(0);
    printf("threads=%d\nkills_sent=%ld\ngate_waits=%" PRIu64 "\n", threads, kills,
           waiting.gate_waits);
    printf("sigusr1_handled=%ld\nmask_changes=%d\nwrong_results=%d\n",
           atomic_load(&usr1_handled), atomic_load(&mask_changes), atomic_load(&wrong_results));
    CHECK(atomic_load(&wrong_results) == 0, "%d wrong results", atomic_load(&wrong_results));
    CHECK(atomic_load(&mask_changes) == 0, "%d mask changes", atomic_load(&mask_changes));
    CHECK(atomic_load(&usr1_handled) > 0, "no SIGUSR1 was handled: no storm");
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "binds";
    int threads = argc > 3 ? atoi(argv[3]) : 1000;
    install(SIGUSR1, on_usr1, 0);
    install(SIGPROF, on_prof, SA_RESTART);
    fixture_open(&lib, path, RTLD_NOW);
    if (strcmp(mode, "binds") == 0) {
        binds(threads, 0);
    } else if (strcmp(mode, "reentrant-binds") == 0) {
        binds(threads, 1);
    } else if (strcmp(mode, "reentrant-per-call") == 0) {
        per_call(threads);
    } else if (strcmp(mode, "per-call-first") == 0) {
        per_call_first(threads);
    } else if (strcmp(mode, "gate") == 0) {
        gate(threads);
    } else {
        FAIL("unknown mode %s", mode);
    }
    printf("result=ok\n");
    return 0;
}
