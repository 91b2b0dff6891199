/* Panics, errors and the last-error API, and what binds on Windows.
 *
 *   errors FIXTURE
 *   errors FIXTURE no-fls   the same calls after the process took every FLS
 *                           index, so the runtime cannot allocate its own:
 *                           every call is served per call
 *
 * Checks the on-error and on-panic values and messages, that a thread's
 * last error is its own and survives later successful calls, that a bound
 * thread keeps its context until it exits (then the FLS callback releases
 * it and runs `Local::release`), and that `attach = per_call` releases at
 * once. */
#include "win_host.h"

static fixture lib;

static const char *last(char *buf, size_t len) { return fixture_last_error(&lib, buf, len); }

static DWORD WINAPI fail_on_thread(void *raw) {
    (void)raw;
    char message[128];
    if (lib.fail(99) != -1) return 1;
    if (strcmp(last(message, sizeof message), "asked to fail with 99") != 0) return 2;
    return 0;
}

/* The main thread is bound: one context bound before these threads run. */
static DWORD WINAPI bind_and_exit(void *raw) {
    int64_t *token = raw;
    *token = lib.token();
    fixture_stats_t s = fixture_snapshot(&lib);
    /* Bound while the thread lives, to one context. */
    return s.contexts_bound == 2 && lib.token() == *token ? 0 : 1;
}

static DWORD WINAPI per_call(void *raw) {
    (void)raw;
    if (lib.token_per_call() <= 0) return 1;
    fixture_stats_t s = fixture_snapshot(&lib);
    return s.contexts_bound == 1 ? 0 : 2;
}

static DWORD exit_code(HANDLE thread) {
    DWORD code = 99;
    if (WaitForSingleObject(thread, INFINITE) != WAIT_OBJECT_0) FAIL("wait failed");
    GetExitCodeThread(thread, &code);
    CloseHandle(thread);
    return code;
}

enum { NO_FLS_THREADS = 8, NO_FLS_ROUNDS = 100 };

/* Plain, #[local], per-call and failing calls, each failure's message read
 * back. */
static DWORD WINAPI no_fls_worker(void *raw) {
    (void)raw;
    char message[128];
    for (int i = 0; i < NO_FLS_ROUNDS; i++) {
        if (lib.plain(i) != i + 1) return 1;
        if (lib.token() <= 0) return 2;
        if (lib.token_per_call() <= 0) return 3;
        if (lib.fail(99) != -1) return 4;
        if (strcmp(last(message, sizeof message), "asked to fail with 99") != 0) return 5;
    }
    return 0;
}

static int no_fls(const char *path) {
    /* The runtime allocates its FLS index on a thread's first call, which
     * may come from the fixture's init: take every index before loading it. */
    long taken = 0;
    while (FlsAlloc(NULL) != FLS_OUT_OF_INDEXES) taken++;
    fixture_open(&lib, path);
    CHECK(fixture_wait_init(&lib, 30) == 0, "the init did not succeed");
    HANDLE threads[NO_FLS_THREADS];
    for (int i = 0; i < NO_FLS_THREADS; i++) threads[i] = fixture_spawn(no_fls_worker, NULL);
    for (int i = 0; i < NO_FLS_THREADS; i++)
        CHECK(exit_code(threads[i]) == 0, "thread %d: a call failed", i);
    CHECK(no_fls_worker(NULL) == 0, "a call on the main thread failed");
    fixture_stats_t s = fixture_snapshot(&lib);
    fixture_print_stats("", &s);
    CHECK(s.contexts_bound == 0, "%" PRIu64 " contexts bound without an exit hook",
          s.contexts_bound);
    CHECK(s.binds == s.releases, "binds %" PRIu64 " != releases %" PRIu64, s.binds, s.releases);
    /* Per call: one bind for each of the 4 calls of every round. */
    CHECK(s.binds >= (NO_FLS_THREADS + 1) * NO_FLS_ROUNDS * 4, "only %" PRIu64 " binds", s.binds);
    CHECK(s.contexts_created <= NO_FLS_THREADS + 1, "%" PRIu64 " contexts created",
          s.contexts_created);
    printf("no-fls: %ld FLS indexes taken first; ok\n", taken);
    return 0;
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    if (argc > 2 && strcmp(argv[2], "no-fls") == 0) return no_fls(path);
    fixture_open(&lib, path);
    CHECK(fixture_wait_init(&lib, 30) == 0, "the init did not succeed");
    char message[256];

    CHECK(lib.last_error_length() == 0, "a last error before any failure");
    CHECK(lib.fail(7) == -1, "fail did not return its on-error value");
    CHECK(strcmp(last(message, sizeof message), "asked to fail with 7") == 0, "got `%s`", message);
    CHECK(lib.last_error_length() == strlen("asked to fail with 7") + 1, "wrong length");
    CHECK(lib.plain(1) == 2, "plain failed");
    CHECK(lib.last_error_length() != 0, "a successful call cleared the last error");

    CHECK(lib.panic(2) == -2, "a panic did not return the on-panic value");
    last(message, sizeof message);
    printf("panic_message=%s\n", message);
    CHECK(strstr(message, "panicked") && strstr(message, "formatted panic message 20"),
          "got `%s`", message);
    CHECK(lib.panic(0) == 1, "no panic, wrong value");

    /* Another thread's error is its own. */
    CHECK(exit_code(fixture_spawn(fail_on_thread, NULL)) == 0, "the other thread's error");
    CHECK(strstr(last(message, sizeof message), "formatted panic message 20"),
          "another thread's failure replaced this thread's last error: `%s`", message);
    lib.clear_last_error();
    CHECK(lib.last_error_length() == 0, "clear_last_error did not clear");
    CHECK(lib.last_error_message(message, sizeof message) == -1, "a message after clearing");

    /* Bound on the first call, released by the FLS callback at exit. The
     * main thread is bound too (it called above). */
    fixture_stats_t before = fixture_snapshot(&lib);
    CHECK(before.contexts_bound == 1, "%" PRIu64 " bound before", before.contexts_bound);
    int64_t token = 0;
    HANDLE thread = CreateThread(NULL, 0, bind_and_exit, &token, 0, NULL);
    if (!thread) FAIL("CreateThread: error %lu", GetLastError());
    CHECK(exit_code(thread) == 0, "a bound thread was not bound while alive");
    fixture_stats_t after = fixture_wait_bound(&lib, 1, 10);
    fixture_print_stats("", &after);
    CHECK(after.contexts_bound == 1, "the exited thread's context is still bound");
    CHECK(after.token_releases == before.token_releases + 1, "Local::release did not run at exit");

    CHECK(exit_code(fixture_spawn(per_call, NULL)) == 0, "attach = per_call kept a context");
    puts("ok");
    return 0;
}
