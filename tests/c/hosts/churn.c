/* Thread churn and bursts of first calls against the dlopen()ed fixture.
 *
 *   churn FIXTURE churn THREADS WAVE   THREADS threads, WAVE alive at a time,
 *                                      each making 2-4 calls
 *   churn FIXTURE together THREADS WAVE
 *                                      the same, but the threads of a wave
 *                                      start together and none exits before
 *                                      all have called (pthread barriers), so
 *                                      a context passes from one thread to
 *                                      another only across a join: what the
 *                                      helgrind run uses
 *   churn FIXTURE burst THREADS        THREADS threads making their first
 *                                      call at the same instant
 *
 * A trailing `no-rss` skips the RSS check (valgrind's own memory grows).
 * The host's main thread never calls into the fixture, so every context it
 * sees bound belongs to a worker. */
#include "fixture_host.h"

static fixture lib;
static int check_rss = 1;

typedef struct {
    int index;
    int calls;
    pthread_barrier_t *start;
    pthread_barrier_t *hold;
    int64_t token;
    int ok;
} worker;

/* 1-3 calls, mixing the #[local]-using callbacks and a plain one. */
static void *churn_worker(void *raw) {
    worker *w = raw;
    if (w->start) pthread_barrier_wait(w->start);
    int ok = 1;
    w->token = lib.token();
    if (w->token <= 0) ok = 0;
    for (int i = 1; i < w->calls; i++) {
        if (i % 2 == 1) {
            if (lib.work(w->index) != w->index + 1) ok = 0;
        } else {
            if (lib.plain(w->index) != w->index + 1) ok = 0;
        }
    }
    /* Still the same context, and it counted every Token call. */
    if (lib.token() != w->token) ok = 0;
    if (lib.token_calls() < 2) ok = 0;
    w->ok = ok;
    if (w->hold) pthread_barrier_wait(w->hold);
    return NULL;
}

static int compare_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static fixture_stats_t settle(void) {
    int state = fixture_wait_init(&lib, 30);
    CHECK(state == 0, "init did not become ready (state %d)", state);
    /* The background init thread binds a context for its qsort callback
     * and releases it when it exits. */
    fixture_stats_t stats = fixture_wait_bound(&lib, 0, 10);
    CHECK(stats.contexts_bound == 0, "%" PRIu64 " contexts still bound before the run",
          stats.contexts_bound);
    return stats;
}

static void churn(int threads, int wave, int together) {
    fixture_stats_t before = settle();
    worker *workers = calloc((size_t)wave, sizeof *workers);
    pthread_t *ids = calloc((size_t)wave, sizeof *ids);
    CHECK(workers && ids, "out of memory");
    long rss_first_wave = 0, rss_peak = 0;
    uint64_t max_created = 0;
    double started = fixture_now();
    for (int done = 0; done < threads; done += wave) {
        int n = threads - done < wave ? threads - done : wave;
        pthread_barrier_t start, hold;
        if (together) {
            pthread_barrier_init(&start, NULL, (unsigned)n);
            pthread_barrier_init(&hold, NULL, (unsigned)n);
        }
        for (int i = 0; i < n; i++) {
            int index = done + i;
            /* `calls` counts the token() calls too: at least two. */
            workers[i] = (worker){.index = index,
                                  .calls = 2 + index % 3,
                                  .start = together ? &start : NULL,
                                  .hold = together ? &hold : NULL};
            ids[i] = fixture_spawn(churn_worker, &workers[i], 0);
        }
        for (int i = 0; i < n; i++) {
            fixture_join(ids[i]);
            CHECK(workers[i].ok, "thread %d saw a wrong result or changed context",
                  done + i);
        }
        if (together) {
            pthread_barrier_destroy(&start);
            pthread_barrier_destroy(&hold);
        }
        fixture_stats_t now = fixture_snapshot(&lib);
        /* Every joined thread released its context before join returned. */
        CHECK(now.contexts_bound == 0, "after wave at %d: %" PRIu64 " contexts still bound",
              done, now.contexts_bound);
        if (now.contexts_created > max_created) max_created = now.contexts_created;
        long rss = fixture_rss_kib();
        if (done == 0) rss_first_wave = rss;
        if (rss > rss_peak) rss_peak = rss;
    }
    double elapsed = fixture_now() - started;
    long rss_end = fixture_rss_kib();
    fixture_stats_t after = fixture_snapshot(&lib);
    uint64_t created = after.contexts_created - before.contexts_created;
    printf("threads=%d\nwave=%d\nseconds=%.3f\n", threads, wave, elapsed);
    printf("us_per_thread=%.2f\n", elapsed * 1e6 / threads);
    printf("contexts_created_during_run=%" PRIu64 "\n", created);
    printf("rss_first_wave_kib=%ld\nrss_peak_kib=%ld\nrss_end_kib=%ld\n", rss_first_wave,
           rss_peak, rss_end);
    fixture_print_stats("", &after);

    CHECK(created <= (uint64_t)wave + 2,
          "%" PRIu64 " contexts created for at most %d concurrent threads", created, wave);
    CHECK(after.contexts_bound == 0, "%" PRIu64 " contexts bound at the end",
          after.contexts_bound);
    CHECK(after.binds - before.binds == (uint64_t)threads, "binds %" PRIu64 " != threads %d",
          after.binds - before.binds, threads);
    CHECK(after.releases - before.releases == (uint64_t)threads,
          "releases %" PRIu64 " != threads %d", after.releases - before.releases, threads);
    CHECK(after.contexts_free == after.contexts_created,
          "free %" PRIu64 " != created %" PRIu64 ": a context went missing",
          after.contexts_free, after.contexts_created);
    CHECK(after.token_binds == after.token_releases,
          "Local::bind ran %" PRIu64 " times but Local::release %" PRIu64,
          after.token_binds, after.token_releases);
    CHECK(after.tokens_created <= after.contexts_created,
          "%" PRIu64 " Token values for %" PRIu64 " contexts: a #[local] was not reused",
          after.tokens_created, after.contexts_created);
    /* Steady state: the memory of a wave is reused by the next. */
    CHECK(!check_rss || rss_end <= rss_first_wave + 4096,
          "RSS grew from %ld KiB after the first wave to %ld KiB", rss_first_wave, rss_end);
    free(workers);
    free(ids);
}

static void burst(int threads) {
    fixture_stats_t before = settle();
    worker *workers = calloc((size_t)threads, sizeof *workers);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    int64_t *tokens = calloc((size_t)threads, sizeof *tokens);
    CHECK(workers && ids && tokens, "out of memory");
    pthread_barrier_t start, hold;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_barrier_init(&hold, NULL, (unsigned)threads);
    double started = fixture_now();
    /* Small stacks: 256 threads in a debug build stay well inside RAM. */
    for (int i = 0; i < threads; i++) {
        workers[i] = (worker){.index = i, .calls = 3, .start = &start, .hold = &hold};
        ids[i] = fixture_spawn(churn_worker, &workers[i], 256 * 1024);
    }
    for (int i = 0; i < threads; i++) fixture_join(ids[i]);
    double elapsed = fixture_now() - started;
    for (int i = 0; i < threads; i++) {
        CHECK(workers[i].ok, "burst thread %d saw a wrong result or changed context", i);
        tokens[i] = workers[i].token;
    }
    /* Live at the same time, so every thread had its own context. */
    qsort(tokens, (size_t)threads, sizeof *tokens, compare_i64);
    for (int i = 1; i < threads; i++)
        CHECK(tokens[i] != tokens[i - 1], "two live threads shared context token %" PRId64,
              tokens[i]);
    fixture_stats_t after = fixture_snapshot(&lib);
    uint64_t created = after.contexts_created - before.contexts_created;
    printf("threads=%d\nseconds=%.3f\ncontexts_created_during_run=%" PRIu64 "\n", threads,
           elapsed, created);
    fixture_print_stats("", &after);
    CHECK(after.binds - before.binds == (uint64_t)threads, "binds %" PRIu64 " != %d",
          after.binds - before.binds, threads);
    CHECK(created <= (uint64_t)threads, "%" PRIu64 " contexts for %d threads", created, threads);
    CHECK(after.contexts_bound == 0, "%" PRIu64 " contexts bound after join",
          after.contexts_bound);
    CHECK(after.contexts_free == after.contexts_created, "free %" PRIu64 " != created %" PRIu64,
          after.contexts_free, after.contexts_created);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&hold);
    free(workers);
    free(ids);
    free(tokens);
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "churn";
    fixture_open(&lib, path, RTLD_NOW);
    if (strcmp(argv[argc - 1], "no-rss") == 0) check_rss = 0;
    if (strcmp(mode, "churn") == 0 || strcmp(mode, "together") == 0) {
        int threads = argc > 3 ? atoi(argv[3]) : 10000;
        int wave = argc > 4 ? atoi(argv[4]) : 8;
        CHECK(threads > 0 && wave > 0, "bad sizes");
        churn(threads, wave, strcmp(mode, "together") == 0);
    } else if (strcmp(mode, "burst") == 0) {
        int threads = argc > 3 ? atoi(argv[3]) : 256;
        CHECK(threads > 0, "bad size");
        burst(threads);
    } else {
        FAIL("unknown mode %s", mode);
    }
    printf("result=ok\n");
    return 0;
}
