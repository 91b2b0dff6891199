/* A C++ exception thrown by host code that a callback called, caught by the
 * C++ code that called the callback, against the dlopen()ed fixture.
 *
 *   exception FIXTURE THREADS   each thread calls `hold_token` (which holds
 *                               the thread's #[local] Token) with a function
 *                               that throws; the caller catches, then calls
 *                               the same callback 1 000 times. The thread's
 *                               first call throws too (it binds the thread
 *                               on the way), and so does a nested callback
 *                               (`nest` called back from inside
 *                               `hold_token`)
 *
 * Threads run 8 at a time; after every wave no context is bound. Prints the
 * counters and `result=ok`. */
#include "fixture_host.h"

#include <stdexcept>

static fixture lib;

enum { WAVE = 8, CALLS_AFTER = 1000 };

extern "C" int64_t throw_out(int32_t depth) {
    (void)depth;
    throw std::runtime_error("thrown through a callback");
}

static bool call_and_catch() {
    try {
        lib.hold_token(1, throw_out);
    } catch (const std::runtime_error &error) {
        return strcmp(error.what(), "thrown through a callback") == 0;
    }
    return false;
}

/* Called back from inside `hold_token`: a nested callback that calls a
 * function that throws. */
extern "C" int64_t nest_and_throw(int32_t depth) {
    return lib.nest(depth + 1, throw_out);
}

static bool nested_call_and_catch() {
    try {
        lib.hold_token(1, nest_and_throw);
    } catch (const std::runtime_error &error) {
        return strcmp(error.what(), "thrown through a callback") == 0;
    }
    return false;
}

static void *run_worker(void *raw) {
    int *ok = static_cast<int *>(raw);
    /* The thread's first call: it binds the thread, then throws. */
    if (!call_and_catch()) return nullptr;
    int64_t token = lib.token();
    if (token <= 0 || !call_and_catch()) return nullptr;
    for (int i = 0; i < CALLS_AFTER; i++) {
        if (lib.hold_token(0, nullptr) != token) return nullptr;
    }
    if (!call_and_catch() || lib.token() != token) return nullptr;
    if (!nested_call_and_catch()) return nullptr;
    for (int i = 0; i < CALLS_AFTER; i++) {
        if (lib.hold_token(0, nullptr) != token) return nullptr;
    }
    *ok = 1;
    return nullptr;
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    int threads = argc > 2 ? atoi(argv[2]) : 1000;
    fixture_open(&lib, path, RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    CHECK(before.contexts_bound == 0, "contexts bound before the run");
    for (int done = 0; done < threads; done += WAVE) {
        int n = threads - done < WAVE ? threads - done : WAVE;
        int ok[WAVE] = {0};
        pthread_t ids[WAVE];
        for (int i = 0; i < n; i++) ids[i] = fixture_spawn(run_worker, &ok[i], 0);
        for (int i = 0; i < n; i++) {
            fixture_join(ids[i]);
            CHECK(ok[i], "thread %d: a call failed after the exception", done + i);
        }
        fixture_stats_t now = fixture_wait_bound(&lib, 0, 10);
        CHECK(now.contexts_bound == 0, "after the wave at %d: %" PRIu64 " contexts still bound",
              done, now.contexts_bound);
    }
    fixture_stats_t after = fixture_snapshot(&lib);
    printf("threads=%d\n", threads);
    printf("contexts_created_during_run=%" PRIu64 "\n",
           after.contexts_created - before.contexts_created);
    printf("token_binds_during_run=%" PRIu64 "\n", after.token_binds - before.token_binds);
    printf("token_releases_during_run=%" PRIu64 "\n",
           after.token_releases - before.token_releases);
    fixture_print_stats("", &after);
    printf("result=ok\n");
    return 0;
}
