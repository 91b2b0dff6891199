/* The fixture's background init on Windows, where the load-time
 * constructor (inside DllMain) only arms the gate and the first callback
 * starts the init.
 *
 *   init FIXTURE slow    (FIXTURE_INIT=slow) callers that arrive early wait
 *                        until the init finishes, then all succeed
 *   init FIXTURE fail    (FIXTURE_INIT=fail) callbacks return their on-error
 *                        value with `initialisation failed: ...` */
#include "win_host.h"

#define EARLY 8

static fixture lib;
static volatile LONG returned;

typedef struct {
    int index;
    int32_t result;
} caller;

static DWORD WINAPI call_early(void *raw) {
    caller *c = raw;
    c->result = lib.work(c->index);
    InterlockedIncrement(&returned);
    return 0;
}

static void slow(void) {
    /* LoadLibrary returned although the init has not finished: DllMain did
     * not wait for anything. */
    caller callers[EARLY];
    HANDLE threads[EARLY];
    for (int i = 0; i < EARLY; i++) {
        callers[i] = (caller){.index = i, .result = 0};
        threads[i] = fixture_spawn(call_early, &callers[i]);
    }
    Sleep(300);
    CHECK(InterlockedCompareExchange(&returned, 0, 0) == 0,
          "%ld early callers returned before the init finished", returned);
    CHECK(lib.init_state(NULL, 0) == 1, "the init is not pending");
    CHECK(lib.work_or_fail(1) == -1, "a gate = fail callback did not fail at once");
    lib.finish_init();
    for (int i = 0; i < EARLY; i++) fixture_join(threads[i]);
    for (int i = 0; i < EARLY; i++)
        CHECK(callers[i].result == i + 1, "early caller %d got %d", i, callers[i].result);
    int64_t sorted = 0, hook = 0;
    CHECK(lib.init_report(&sorted, &hook) == 0, "init_report failed");
    /* The init's qsort comparator is a gated callback made by init code: it
     * ran at once instead of waiting for the init it is part of. */
    CHECK(sorted == 1, "the init's qsort through C did not sort (%" PRId64 ")", sorted);
    fixture_stats_t s = fixture_snapshot(&lib);
    fixture_print_stats("", &s);
    CHECK(s.gate_waits >= 1, "no caller waited at the gate");
}

static void fail(void) {
    CHECK(lib.work(1) == -1, "a callback passed a failed init");
    char message[256];
    fixture_last_error(&lib, message, sizeof message);
    printf("last_error=%s\n", message);
    CHECK(strstr(message, "initialisation failed") && strstr(message, "fixture init failed on purpose"),
          "unexpected last error `%s`", message);
    CHECK(lib.init_state(NULL, 0) == 2, "the init state is not failed");
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    fixture_open(&lib, path);
    if (argc == 3 && strcmp(argv[2], "slow") == 0) {
        slow();
    } else if (argc == 3 && strcmp(argv[2], "fail") == 0) {
        fail();
    } else {
        FAIL("usage: init FIXTURE slow|fail");
    }
    puts("ok");
    return 0;
}
