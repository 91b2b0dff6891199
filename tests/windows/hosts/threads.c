/* Threads made with CreateThread against the LoadLibrary()ed fixture.
 *
 *   threads FIXTURE burst THREADS        THREADS threads making their first
 *                                        call at the same instant
 *   threads FIXTURE churn TOTAL WAVE     TOTAL short-lived threads, WAVE
 *                                        alive at a time, 2-4 calls each
 *   threads FIXTURE fibers               callbacks on two fibers of a thread
 *                                        finishing out of order, one holding
 *                                        the thread's #[local] Token
 *   threads FIXTURE fiber-delete         DeleteFiber of a suspended fiber that
 *                                        carries a thread's exit hook, by the
 *                                        same thread and by another one
 *   threads FIXTURE exit-in-call         ExitThread inside callbacks: bound,
 *                                        nested, holding the Token, per call
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

/* While a callback suspended on `holder` holds the Token, the running
 * fiber must be refused it; then `holder` resumes, and its callback must
 * find it had the Token to itself (`*held`, set when it returns). */
static void resume_holder(void *holder, const int64_t *held) {
    char message[256];
    int64_t during = lib.token();
    fixture_last_error(&lib, message, sizeof message);
    CHECK(during == -1 && strstr(message, "already in use"),
          "the Token held on the suspended fiber was handed out: %" PRId64 " (%s)", during,
          message);
    SwitchToFiber(holder);
    CHECK(*held == 1, "the suspended callback did not have the Token to itself: %" PRId64,
          *held);
}

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
    resume_holder(fiber_y, &fiber_held);
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

/* --- deleting fibers ---------------------------------------------------- */

/* The thread makes its first call on fiber X (it binds there); a callback
 * on fiber Y holds the Token and switches back to the thread's own fiber,
 * which deletes X. The context must stay bound, with the Token held by
 * the suspended callback: deleting a suspended fiber is not the thread's
 * exit. */
static void *del_main, *del_x, *del_y;
static int64_t del_own, del_held;

static int64_t del_back_to_main(int32_t depth) {
    (void)depth;
    SwitchToFiber(del_main);
    return 0;
}

static VOID WINAPI del_x_main(void *unused) {
    (void)unused;
    del_own = lib.token();
    for (;;) SwitchToFiber(del_main); /* deleted while suspended here */
}

static VOID WINAPI del_y_main(void *unused) {
    (void)unused;
    del_held = lib.hold_token_alone(del_back_to_main);
    for (;;) SwitchToFiber(del_main);
}

static DWORD WINAPI delete_binding_fiber(void *unused) {
    (void)unused;
    del_main = ConvertThreadToFiber(NULL);
    CHECK(del_main, "ConvertThreadToFiber: error %lu", GetLastError());
    del_x = CreateFiber(0, del_x_main, NULL);
    del_y = CreateFiber(0, del_y_main, NULL);
    CHECK(del_x && del_y, "CreateFiber: error %lu", GetLastError());
    SwitchToFiber(del_x);
    CHECK(del_own > 0, "token() on fiber X failed");
    SwitchToFiber(del_y);
    fixture_stats_t before = fixture_snapshot(&lib);
    DeleteFiber(del_x);
    fixture_stats_t after = fixture_snapshot(&lib);
    CHECK(after.releases == before.releases && after.token_releases == before.token_releases,
          "deleting the suspended fiber the thread bound on released its context (releases "
          "%" PRIu64 " -> %" PRIu64 ", Token releases %" PRIu64 " -> %" PRIu64 ")",
          before.releases, after.releases, before.token_releases, after.token_releases);
    resume_holder(del_y, &del_held);
    CHECK(lib.token() == del_own, "the thread is no longer served by the context it bound");
    fixture_stats_t end = fixture_snapshot(&lib);
    CHECK(end.binds == before.binds, "the thread bound again (%" PRIu64 " -> %" PRIu64 ")",
          before.binds, end.binds);
    DeleteFiber(del_y);
    CHECK(ConvertFiberToThread(), "ConvertFiberToThread: error %lu", GetLastError());
    return 0;
}

/* Thread T makes a per-call call on its fiber F (not bound: F carries
 * T's exit hook for the cached context), then thread D, bound and with a
 * last error of its own, deletes F. D must keep both; T, armed again by
 * its next call, must hand its context back when it exits. */
static void *t_main, *t_fiber;
static HANDLE fiber_ready, fiber_deleted;

static VOID WINAPI t_fiber_main(void *unused) {
    (void)unused;
    CHECK(lib.token_per_call() > 0, "token_per_call() on fiber F failed");
    for (;;) SwitchToFiber(t_main);
}

static DWORD WINAPI fiber_owner(void *unused) {
    (void)unused;
    t_main = ConvertThreadToFiber(NULL);
    CHECK(t_main, "ConvertThreadToFiber: error %lu", GetLastError());
    t_fiber = CreateFiber(0, t_fiber_main, NULL);
    CHECK(t_fiber, "CreateFiber: error %lu", GetLastError());
    SwitchToFiber(t_fiber);
    SetEvent(fiber_ready);
    CHECK(WaitForSingleObject(fiber_deleted, INFINITE) == WAIT_OBJECT_0, "wait");
    CHECK(lib.token_per_call() > 0, "token_per_call() after F was deleted failed");
    CHECK(ConvertFiberToThread(), "ConvertFiberToThread: error %lu", GetLastError());
    return 0;
}

static DWORD WINAPI fiber_deleter(void *unused) {
    (void)unused;
    int64_t own = lib.token();
    CHECK(own > 0, "token() failed");
    CHECK(lib.fail(9) == -1, "fail(9) did not fail");
    CHECK(WaitForSingleObject(fiber_ready, INFINITE) == WAIT_OBJECT_0, "wait");
    fixture_stats_t before = fixture_snapshot(&lib);
    DeleteFiber(t_fiber);
    fixture_stats_t after = fixture_snapshot(&lib);
    CHECK(after.releases == before.releases,
          "deleting another thread's fiber released a context (releases %" PRIu64 " -> %" PRIu64
          ")",
          before.releases, after.releases);
    char message[256];
    fixture_last_error(&lib, message, sizeof message);
    CHECK(strcmp(message, "asked to fail with 9") == 0,
          "deleting another thread's fiber freed this thread's last error (now `%s`)", message);
    CHECK(lib.token() == own, "the deleting thread is no longer served by its context");
    CHECK(fixture_snapshot(&lib).binds == before.binds, "the deleting thread bound again");
    SetEvent(fiber_deleted);
    return 0;
}

static void fiber_delete(void) {
    fixture_stats_t start = fixture_snapshot(&lib);
    fixture_join(fixture_spawn(delete_binding_fiber, NULL));
    fixture_stats_t same = fixture_wait_bound(&lib, start.contexts_bound, 10);
    fixture_print_stats("same_thread: ", &same);
    CHECK(same.contexts_bound == start.contexts_bound, "the context was not released at exit");
    CHECK(same.releases == start.releases + 1 && same.binds == start.binds + 1,
          "one bind and one release expected: binds +%" PRIu64 " releases +%" PRIu64,
          same.binds - start.binds, same.releases - start.releases);
    CHECK(same.token_releases == start.token_releases + 1, "the Token was not released once");
    printf("delete_binding_fiber=1\n");

    fiber_ready = CreateEventA(NULL, TRUE, FALSE, NULL);
    fiber_deleted = CreateEventA(NULL, TRUE, FALSE, NULL);
    CHECK(fiber_ready && fiber_deleted, "CreateEvent: error %lu", GetLastError());
    HANDLE owner = fixture_spawn(fiber_owner, NULL);
    HANDLE deleter = fixture_spawn(fiber_deleter, NULL);
    fixture_join(owner);
    fixture_join(deleter);
    fixture_stats_t cross = fixture_wait_bound(&lib, start.contexts_bound, 10);
    fixture_print_stats("other_thread: ", &cross);
    CHECK(cross.contexts_bound == start.contexts_bound, "%" PRIu64 " contexts still bound",
          cross.contexts_bound);
    CHECK(cross.binds == cross.releases, "binds %" PRIu64 " != releases %" PRIu64, cross.binds,
          cross.releases);
    CHECK(cross.token_binds == cross.token_releases, "Token binds %" PRIu64 " != releases %" PRIu64,
          cross.token_binds, cross.token_releases);
    CHECK(cross.contexts_free == cross.contexts_created,
          "%" PRIu64 " of %" PRIu64 " contexts not back on the free list",
          cross.contexts_created - cross.contexts_free, cross.contexts_created);
    CloseHandle(fiber_ready);
    CloseHandle(fiber_deleted);
    printf("delete_other_threads_fiber=1\n");
}

/* --- ExitThread inside a callback ------------------------------------- */

enum { EXIT_CODE = 7 };

static int64_t exit_now(int32_t depth) {
    (void)depth;
    ExitThread(EXIT_CODE);
}

/* Nests through `nest` down to depth 0, then exits the thread there. */
static int64_t nest_then_exit(int32_t depth) {
    if (depth > 0) return lib.nest(depth, nest_then_exit);
    ExitThread(EXIT_CODE);
}

static DWORD WINAPI exit_bound(void *unused) {
    (void)unused;
    CHECK(lib.token() > 0, "token() failed");
    lib.nest(1, exit_now);
    return 1; /* not reached */
}

static DWORD WINAPI exit_nested(void *unused) {
    (void)unused;
    CHECK(lib.token() > 0, "token() failed");
    lib.nest(4, nest_then_exit);
    return 1;
}

static DWORD WINAPI exit_holding_token(void *unused) {
    (void)unused;
    lib.hold_token(1, exit_now); /* the thread's first call */
    return 1;
}

static DWORD WINAPI exit_per_call(void *unused) {
    (void)unused;
    lib.nest_per_call(1, exit_now);
    return 1;
}

/* A thread whose context was released by an exit inside a call: the
 * Token is free again, and held calls work. */
static int64_t return_zero(int32_t depth) {
    (void)depth;
    return 0;
}

static DWORD WINAPI after_exits(void *unused) {
    (void)unused;
    int64_t token = lib.token();
    CHECK(token > 0, "token() after the exits failed");
    CHECK(lib.hold_token(1, return_zero) == token,
          "the Token of a context released by an exit inside a call is not free");
    return 0;
}

static void exit_in_call(void) {
    static const struct {
        const char *name;
        LPTHREAD_START_ROUTINE start;
    } cases[] = {
        {"bound", exit_bound},
        {"nested", exit_nested},
        {"holding_token", exit_holding_token},
        {"per_call", exit_per_call},
    };
    fixture_stats_t start = fixture_snapshot(&lib);
    for (int round = 0; round < 8; round++) {
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            HANDLE thread = fixture_spawn(cases[i].start, NULL);
            CHECK(WaitForSingleObject(thread, INFINITE) == WAIT_OBJECT_0, "wait");
            DWORD code = 0;
            GetExitCodeThread(thread, &code);
            CloseHandle(thread);
            CHECK(code == EXIT_CODE, "%s: the thread did not exit inside the call (code %lu)",
                  cases[i].name, code);
            fixture_stats_t s = fixture_wait_bound(&lib, start.contexts_bound, 10);
            CHECK(s.contexts_bound == start.contexts_bound,
                  "%s: the context of a thread that exited inside a call is still bound",
                  cases[i].name);
            CHECK(s.binds == s.releases, "%s: binds %" PRIu64 " != releases %" PRIu64,
                  cases[i].name, s.binds, s.releases);
            CHECK(s.token_binds == s.token_releases,
                  "%s: Token binds %" PRIu64 " != releases %" PRIu64, cases[i].name,
                  s.token_binds, s.token_releases);
        }
        HANDLE thread = fixture_spawn(after_exits, NULL);
        fixture_join(thread);
    }
    fixture_stats_t end = fixture_wait_bound(&lib, start.contexts_bound, 10);
    fixture_print_stats("", &end);
    /* One context, reused by every thread (each ran alone). */
    CHECK(end.contexts_created - start.contexts_created <= 1, "%" PRIu64 " contexts created",
          end.contexts_created - start.contexts_created);
    printf("exit_in_call=1\n");
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    if (getenv("HOST_FILL_TLS")) fill_tls_slots();
    fixture_open(&lib, path);
    CHECK(fixture_wait_init(&lib, 30) == 0, "the init did not succeed");
    /* The runtime's init thread binds a context of its own while it runs
     * (its qsort comparator) and may still be exiting: the modes count
     * from a rest where no thread is bound (the main thread never is). */
    CHECK(fixture_wait_bound(&lib, 0, 30).contexts_bound == 0,
          "the init thread's context was not released");
    if (argc == 4 && strcmp(argv[2], "burst") == 0) {
        burst(atoi(argv[3]));
    } else if (argc == 5 && strcmp(argv[2], "churn") == 0) {
        churn(atoi(argv[3]), atoi(argv[4]));
    } else if (argc == 3 && strcmp(argv[2], "fibers") == 0) {
        fibers();
    } else if (argc == 3 && strcmp(argv[2], "fiber-delete") == 0) {
        fiber_delete();
    } else if (argc == 3 && strcmp(argv[2], "exit-in-call") == 0) {
        exit_in_call();
    } else {
        FAIL("usage: threads FIXTURE burst N | churn TOTAL WAVE | fibers | fiber-delete | exit-in-call");
    }
    puts("ok");
    return 0;
}
