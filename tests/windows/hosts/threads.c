/* Threads made with CreateThread against the LoadLibrary()ed fixture.
 *
 *   threads FIXTURE burst THREADS        THREADS threads making their first
 *                                        call at the same instant
 *   threads FIXTURE churn TOTAL WAVE     TOTAL short-lived threads, WAVE
 *                                        alive at a time, 2-4 calls each
 *   threads FIXTURE fibers               callbacks on two fibers of a thread
 *                                        finishing out of order, one holding
 *                                        the thread's #[local] Token
 *
 * With HOST_FILL_TLS set, the host first takes the 64 TLS indexes the TEB
 * holds inline, so the runtime's slot lives in the expansion block.
 *
 * Both check that every thread was served by one context for all its
 * calls, that no more contexts were created than threads were alive at
 * once, and that the fiber-local-storage callback released every context
 * when its thread exited (bound count back to 0, `Local::release` run once
 * per bind). The main thread never calls a callback. */
#include "win_host.h"

static fixture lib;
/* burst: set to start every thread at once; set by the last thread to have
 * made its calls, so no thread exits (and hands its context on) before all
 * have called. */
static HANDLE go, hold;
static volatile LONG calling;

typedef struct {
    int index;
    int calls;
    int64_t token;
    int ok;
} worker;

static DWORD WINAPI work(void *raw) {
    worker *w = raw;
    if (go && WaitForSingleObject(go, INFINITE) != WAIT_OBJECT_0) return 1;
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
    /* Still the same context, which counted every Token call. */
    if (lib.token() != w->token) ok = 0;
    if (lib.token_calls() < 2) ok = 0;
    w->ok = ok;
    if (hold) {
        if (InterlockedDecrement(&calling) == 0) SetEvent(hold);
        if (WaitForSingleObject(hold, INFINITE) != WAIT_OBJECT_0) return 1;
    }
    return 0;
}

static void check_released(const char *mode, int peak, double started) {
    fixture_stats_t s = fixture_wait_bound(&lib, 0, 30);
    fixture_print_stats("", &s);
    printf("%s_seconds=%.3f\n", mode, fixture_now() - started);
    /* The runtime's init thread binds one context of its own (its qsort
     * comparator) while it runs. */
    CHECK(s.contexts_created <= (uint64_t)peak + 1, "%" PRIu64 " contexts for %d threads at once",
          s.contexts_created, peak);
    CHECK(s.contexts_bound == 0, "%" PRIu64 " contexts still bound", s.contexts_bound);
    CHECK(s.binds == s.releases, "binds %" PRIu64 " != releases %" PRIu64, s.binds, s.releases);
    CHECK(s.token_binds == s.token_releases, "Token binds %" PRIu64 " != releases %" PRIu64,
          s.token_binds, s.token_releases);
}

static void burst(int threads) {
    double started = fixture_now();
    go = CreateEventA(NULL, TRUE, FALSE, NULL);
    hold = CreateEventA(NULL, TRUE, FALSE, NULL);
    if (!go || !hold) FAIL("CreateEvent: error %lu", GetLastError());
    calling = threads;
    worker *workers = calloc((size_t)threads, sizeof *workers);
    HANDLE *handles = calloc((size_t)threads, sizeof *handles);
    if (!workers || !handles) FAIL("out of memory");
    for (int i = 0; i < threads; i++) {
        workers[i] = (worker){.index = i, .calls = 3};
        handles[i] = fixture_spawn(work, &workers[i]);
    }
    SetEvent(go);
    for (int i = 0; i < threads; i++) fixture_join(handles[i]);
    for (int i = 0; i < threads; i++) {
        CHECK(workers[i].ok, "thread %d saw a wrong result", i);
        for (int j = 0; j < i; j++)
            CHECK(workers[i].token != workers[j].token,
                  "threads %d and %d, alive at once, shared context %" PRId64, i, j,
                  workers[i].token);
    }
    check_released("burst", threads, started);
    free(workers);
    free(handles);
    CloseHandle(go);
    CloseHandle(hold);
    go = hold = NULL;
}

static void churn(int total, int wave) {
    double started = fixture_now();
    worker *workers = calloc((size_t)wave, sizeof *workers);
    HANDLE *handles = calloc((size_t)wave, sizeof *handles);
    if (!workers || !handles) FAIL("out of memory");
    for (int done = 0; done < total; done += wave) {
        int n = total - done < wave ? total - done : wave;
        for (int i = 0; i < n; i++) {
            workers[i] = (worker){.index = done + i, .calls = 2 + (done + i) % 3};
            handles[i] = fixture_spawn(work, &workers[i]);
        }
        for (int i = 0; i < n; i++) fixture_join(handles[i]);
        for (int i = 0; i < n; i++) CHECK(workers[i].ok, "thread %d saw a wrong result", done + i);
    }
    printf("threads=%d wave=%d\n", total, wave);
    check_released("churn", wave, started);
    free(workers);
    free(handles);
}

/* Takes every TLS index below 64, so the runtime's slot is one of the
 * TEB's expansion slots (its slow read path). */
static void fill_tls_slots(void) {
    DWORD index;
    while ((index = TlsAlloc()) < 64) {
    }
    if (index == TLS_OUT_OF_INDEXES) FAIL("TlsAlloc: error %lu", GetLastError());
    printf("tls_expansion=1\n");
}

/* --- fibers ------------------------------------------------------------ */

/* A callback on fiber X (`nest`) switches to fiber Y, whose callback
 * (`hold_token_alone`) takes the Token and switches back to X while
 * holding it; the callback on X returns first, and the thread's own fiber
 * calls in while the one on Y is suspended: the Token must be refused,
 * then Y's callback must find it had the Token to itself. */
static void *main_fiber, *fiber_x, *fiber_y;
static int64_t fiber_held;

static int64_t fiber_back_to_x(int32_t depth) {
    (void)depth;
    SwitchToFiber(fiber_x);
    return 0;
}

static VOID WINAPI fiber_y_main(void *unused) {
    (void)unused;
    fiber_held = lib.hold_token_alone(fiber_back_to_x);
    SwitchToFiber(main_fiber); /* never resumed */
}

static int64_t fiber_to_y(int32_t depth) {
    (void)depth;
    SwitchToFiber(fiber_y);
    return 0;
}

static VOID WINAPI fiber_x_main(void *unused) {
    (void)unused;
    CHECK(lib.nest(1, fiber_to_y) == 0, "nest failed");
    SwitchToFiber(main_fiber); /* never resumed */
}

static DWORD WINAPI fibers_thread(void *unused) {
    (void)unused;
    main_fiber = ConvertThreadToFiber(NULL);
    CHECK(main_fiber, "ConvertThreadToFiber: error %lu", GetLastError());
    int64_t own = lib.token();
    CHECK(own > 0, "token() failed");
    fiber_x = CreateFiber(0, fiber_x_main, NULL);
    fiber_y = CreateFiber(0, fiber_y_main, NULL);
    CHECK(fiber_x && fiber_y, "CreateFiber: error %lu", GetLastError());
    SwitchToFiber(fiber_x);
    char message[256];
    int64_t during = lib.token();
    fixture_last_error(&lib, message, sizeof message);
    CHECK(during == -1 && strstr(message, "already in use"),
          "the Token held on the suspended fiber was handed out: %" PRId64 " (%s)", during,
          message);
    SwitchToFiber(fiber_y);
    CHECK(fiber_held == 1, "the suspended callback did not have the Token to itself: %" PRId64,
          fiber_held);
    CHECK(lib.token() == own, "the Token is not free once its holder returned");
    DeleteFiber(fiber_x);
    DeleteFiber(fiber_y);
    CHECK(ConvertFiberToThread(), "ConvertFiberToThread: error %lu", GetLastError());
    return 0;
}

static void fibers(void) {
    HANDLE thread = CreateThread(NULL, 0, fibers_thread, NULL, 0, NULL);
    CHECK(thread, "CreateThread: error %lu", GetLastError());
    CHECK(WaitForSingleObject(thread, INFINITE) == WAIT_OBJECT_0, "wait");
    CloseHandle(thread);
    fixture_stats_t after = fixture_wait_bound(&lib, 0, 10);
    CHECK(after.contexts_bound == 0, "%" PRIu64 " contexts still bound", after.contexts_bound);
    printf("fibers_out_of_order=1\n");
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    if (getenv("HOST_FILL_TLS")) fill_tls_slots();
    fixture_open(&lib, path);
    CHECK(fixture_wait_init(&lib, 30) == 0, "the init did not succeed");
    if (argc == 4 && strcmp(argv[2], "burst") == 0) {
        burst(atoi(argv[3]));
    } else if (argc == 5 && strcmp(argv[2], "churn") == 0) {
        churn(atoi(argv[3]), atoi(argv[4]));
    } else if (argc == 3 && strcmp(argv[2], "fibers") == 0) {
        fibers();
    } else {
        FAIL("usage: threads FIXTURE burst N | churn TOTAL WAVE | fibers");
    }
    puts("ok");
    return 0;
}
