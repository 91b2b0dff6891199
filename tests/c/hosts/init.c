/* The fixture's background #[callgate::init], as a C program sees it. The
 * test sets FIXTURE_INIT to choose what the init does.
 *
 *   init FIXTURE ready          (FIXTURE_INIT unset) the init called back
 *                               through C's qsort without deadlocking
 *   init FIXTURE slow THREADS   (FIXTURE_INIT=slow) THREADS callers wait for
 *                               the init, which calls back through the host
 *                               meanwhile, then all succeed
 *   init FIXTURE failed TEXT    (FIXTURE_INIT=fail or panic) every callback
 *                               returns its on_error value, and the last
 *                               error names the init and contains TEXT */
#include "fixture_host.h"

#include <stdatomic.h>

static fixture lib;
static char message[512];

/* --- ready ----------------------------------------------------------------- */

static void ready(void) {
    int state = fixture_wait_init(&lib, 30);
    CHECK(state == 0, "init state %d", state);
    int64_t sorted = 0, hook = 0;
    CHECK(lib.init_report(&sorted, &hook) == 0, "init_report failed");
    CHECK(sorted == 1, "the init's qsort with a Rust comparator gave %" PRId64, sorted);
    CHECK(lib.work(1) == 2, "work after init");
    printf("init_sorted=%" PRId64 "\n", sorted);
}

/* --- slow -------------------------------------------------------------------- */

static atomic_int returned, hook_ran;
static atomic_int early_failures;

typedef struct {
    int index;
    int32_t result;
    double waited;
} waiter;

static void *wait_for_init(void *raw) {
    waiter *w = raw;
    double started = fixture_now();
    w->result = lib.work(w->index);
    w->waited = fixture_now() - started;
    atomic_fetch_add(&returned, 1);
    return NULL;
}

/* Runs on the fixture's init thread, called by the init (Rust → C), and
 * calls gated callbacks (C → Rust): they must run, not wait for the init
 * that is running them. */
static int64_t init_hook(void) {
    int64_t result = lib.work(100);
    if (lib.token() <= 0) result = -1;
    atomic_store(&hook_ran, 1);
    return result;
}

static void *fail_fast(void *raw) {
    (void)raw;
    if (lib.work_or_fail(1) == -1) {
        fixture_last_error(&lib, message, sizeof message);
        if (strstr(message, "before initialisation finished") != NULL)
            atomic_fetch_add(&early_failures, 1);
    }
    return NULL;
}

static void slow(int threads) {
    CHECK(lib.init_state(NULL, 0) == 1, "the slow init is not pending after dlopen");
    waiter *waiters = calloc((size_t)threads, sizeof *waiters);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    CHECK(waiters && ids, "out of memory");
    fixture_stats_t before = fixture_snapshot(&lib);
    for (int i = 0; i < threads; i++) {
        waiters[i].index = i;
        ids[i] = fixture_spawn(wait_for_init, &waiters[i], 0);
    }
    /* Every caller reaches the gate and waits there. */
    double deadline = fixture_now() + 20;
    while (fixture_snapshot(&lib).gate_waits - before.gate_waits < (uint64_t)threads &&
           fixture_now() < deadline)
        fixture_sleep_ms(1);
    fixture_stats_t waiting = fixture_snapshot(&lib);
    CHECK(waiting.gate_waits - before.gate_waits == (uint64_t)threads,
          "%" PRIu64 " of %d callers waited at the gate", waiting.gate_waits - before.gate_waits,
          threads);
    /* gate = fail does not wait. */
    fixture_join(fixture_spawn(fail_fast, NULL, 0));
    CHECK(atomic_load(&early_failures) == 1, "gate = fail did not fail fast");
    /* The init calls back through the host's C code while callers wait. */
    lib.set_init_hook(init_hook);
    deadline = fixture_now() + 20;
    while (!atomic_load(&hook_ran) && fixture_now() < deadline) fixture_sleep_ms(1);
    CHECK(atomic_load(&hook_ran), "the init's call into C (and back) did not complete");
    fixture_sleep_ms(50);
    CHECK(atomic_load(&returned) == 0, "%d callers passed the gate before the init finished",
          atomic_load(&returned));
    CHECK(lib.init_state(NULL, 0) == 1, "init no longer pending");

    double released = fixture_now();
    lib.finish_init();
    for (int i = 0; i < threads; i++) fixture_join(ids[i]);
    double all_back = fixture_now() - released;
    for (int i = 0; i < threads; i++)
        CHECK(waiters[i].result == i + 1, "waiter %d got %d", i, waiters[i].result);
    CHECK(lib.init_state(NULL, 0) == 0, "init not ready");
    int64_t sorted = 0, hook = 0;
    CHECK(lib.init_report(&sorted, &hook) == 0, "init_report failed");
    CHECK(sorted == 1, "the init's qsort callback failed: %" PRId64, sorted);
    CHECK(hook == 101, "the init's hook returned %" PRId64, hook);
    double min_wait = 1e9;
    for (int i = 0; i < threads; i++)
        if (waiters[i].waited < min_wait) min_wait = waiters[i].waited;
    printf("waiters=%d\ngate_waits=%" PRIu64 "\nmin_wait_ms=%.1f\nall_back_ms=%.1f\n", threads,
           waiting.gate_waits - before.gate_waits, min_wait * 1e3, all_back * 1e3);
    printf("init_hook_result=%" PRId64 "\n", hook);
    free(waiters);
    free(ids);
}

/* --- failed ------------------------------------------------------------------ */

static const char *expected_text;

/* Every kind of callback returns its on_error value with the init's
 * message as the last error. */
static void check_every_callback_fails(const char *where) {
    int32_t value = 5;
    fixture_pair pair = {1, 2};
#define EXPECT_FAILURE(call, fallback)                                                      \
    do {                                                                                   \
        lib.clear_last_error();                                                            \
        CHECK((call) == (fallback), "%s: %s did not return its on_error value", where,     \
              #call);                                                                       \
        fixture_last_error(&lib, message, sizeof message);                                 \
        CHECK(strstr(message, "initialisation failed: `fixture_init`") != NULL &&          \
                  strstr(message, expected_text) != NULL,                                  \
              "%s: %s left last error '%s'", where, #call, message);                       \
    } while (0)
    EXPECT_FAILURE(lib.work(1), -1);
    EXPECT_FAILURE(lib.token(), -1);
    EXPECT_FAILURE(lib.token_per_call(), -1);
    EXPECT_FAILURE(lib.plain(1), -1);
    EXPECT_FAILURE(lib.work_or_fail(1), -1);
    EXPECT_FAILURE(lib.read_ref(&value), -1);
    EXPECT_FAILURE(lib.pair_sum(&pair), -1);
    EXPECT_FAILURE(lib.str_chars("text"), -1);
    EXPECT_FAILURE(lib.panic(0), -1);
    EXPECT_FAILURE(lib.moody_error(0), -1);
    EXPECT_FAILURE(lib.nest(3, NULL), -2);
    EXPECT_FAILURE(lib.panic_pointer(0), NULL);
    lib.clear_last_error();
    lib.panic_unit(0);
    fixture_last_error(&lib, message, sizeof message);
    CHECK(strstr(message, expected_text) != NULL, "%s: panic_unit left '%s'", where, message);
#undef EXPECT_FAILURE
}

static void *failing_caller(void *raw) {
    (void)raw;
    check_every_callback_fails("a thread that called during the init");
    return NULL;
}

static void failed(const char *text) {
    expected_text = text;
    /* Some callers arrive while the init is still running. */
    pthread_t ids[8];
    for (int i = 0; i < 8; i++) ids[i] = fixture_spawn(failing_caller, NULL, 0);
    int state = fixture_wait_init(&lib, 30);
    char state_message[512] = "";
    CHECK(lib.init_state(state_message, sizeof state_message) == 2,
          "init state %d, expected failed", state);
    CHECK(strstr(state_message, text) != NULL, "init_state message '%s'", state_message);
    for (int i = 0; i < 8; i++) fixture_join(ids[i]);
    fixture_stats_t before = fixture_snapshot(&lib);
    check_every_callback_fails("the main thread");
    fixture_stats_t after = fixture_snapshot(&lib);
    /* The gate turns a call away before it attaches the thread or runs
       the body: nothing bound, nothing caught. */
    CHECK(after.binds == before.binds && after.panics_caught == before.panics_caught,
          "a call passed the gate after the init failed");
    CHECK(after.errors_returned - before.errors_returned >= 13,
          "%" PRIu64 " errors counted", after.errors_returned - before.errors_returned);
    printf("init_message=%s\n", state_message);
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "ready";
    fixture_open(&lib, path, RTLD_NOW);
    if (strcmp(mode, "ready") == 0) {
        ready();
    } else if (strcmp(mode, "slow") == 0) {
        slow(argc > 3 ? atoi(argv[3]) : 16);
    } else if (strcmp(mode, "failed") == 0) {
        CHECK(argc > 3, "failed needs the expected text");
        failed(argv[3]);
    } else {
        FAIL("unknown mode %s", mode);
    }
    printf("result=ok\n");
    return 0;
}
