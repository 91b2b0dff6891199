/* The depth program's modes on green threads, coroutines of one thread
 * whose callbacks finish out of order: interleaved (fixed orders, bound
 * and per call, and a per-call callback left by longjmp) and green-storm
 * (a scheduler switching at random). Included once, by depth.c where the
 * C library has swapcontext: uses its lib, message, make_coroutine and
 * map_below. */
#ifndef CALLGATE_HOSTS_DEPTH_GREEN_THREADS_H
#define CALLGATE_HOSTS_DEPTH_GREEN_THREADS_H

/* --- callbacks that finish out of order (green threads) ------------------ */

/* Two coroutines on one thread: a callback on X (`nest`, or
 * `nest_per_call` with `green_per_call`) switches to Y, whose callback
 * (`hold_token`) takes the thread's Token and switches back to X while
 * holding it; the callback on X then returns first, and the thread's own
 * stack calls in while the one on Y is still suspended. */
static ucontext_t green_thread, green_x, green_y;
static int64_t green_held;
static int green_per_call;

static int64_t green_back_to_x(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&green_y, &green_x) == 0, "swapcontext");
    return 0;
}

static int green_plain; /* Y's callback is `nest`, holding nothing */

static void green_y_main(void) {
    green_held = green_plain ? lib.nest(1, green_back_to_x) : lib.hold_token(1, green_back_to_x);
}

static int64_t green_to_y(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&green_x, &green_y) == 0, "swapcontext");
    return 0;
}

static void green_x_main(void) {
    int64_t nested = green_per_call ? lib.nest_per_call(1, green_to_y) : lib.nest(1, green_to_y);
    CHECK(nested == 0, "nest returned %" PRId64, nested);
}

/* Runs X and Y on the stacks given until the callback on X returned, then
 * asks for the Token (per call with `green_per_call`) into `*during` and
 * `error` while Y's holds it, then resumes Y until it ends. */
static void outlive(void *x_stack, void *y_stack, size_t size, int64_t *during,
                    char error[256]) {
    make_coroutine(&green_y, y_stack, size, &green_thread, green_y_main);
    make_coroutine(&green_x, x_stack, size, &green_thread, green_x_main);
    CHECK(swapcontext(&green_thread, &green_x) == 0, "swapcontext");
    *during = green_per_call ? lib.token_per_call() : lib.token();
    fixture_last_error(&lib, error, 256);
    CHECK(lib.plain(1) == 2, "a callback without #[local] failed meanwhile");
    CHECK(swapcontext(&green_thread, &green_y) == 0, "swapcontext");
}

/* The other order: the thread's outermost callback, on Y (`nest`),
 * switches to the thread's own stack, whose callback (`hold_token`) takes
 * the Token and switches back to Y; `nest` returns first, and Y calls in
 * while the callback on the thread's stack is suspended. */
static ucontext_t first_y, first_y_again, first_thread, first_inner;
static int64_t first_during;
static char first_message[256];

static int64_t first_inner_to_y(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&first_inner, &first_y) == 0, "swapcontext");
    return 0;
}

static int64_t first_y_to_thread(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&first_y, &first_thread) == 0, "swapcontext");
    return 0;
}

static void first_y_main(void) {
    int64_t nested = lib.nest(1, first_y_to_thread);
    CHECK(nested == 0, "nest returned %" PRId64, nested);
    first_during = lib.token();
    fixture_last_error(&lib, first_message, sizeof first_message);
    /* Back into `hold_token` on the thread's stack, for good. */
    CHECK(swapcontext(&first_y_again, &first_inner) == 0, "swapcontext");
}

static void *interleaved_thread(void *raw) {
    int kib = *(int *)raw;
    size_t size = (size_t)kib * 1024;
    int64_t own = lib.token();
    CHECK(own > 0, "token() failed");
    void *x_stack = map_below((uintptr_t)&own, size);
    void *y_stack = map_below((uintptr_t)&own, size);
    int64_t during;
    outlive(x_stack, y_stack, size, &during, message);
    printf("token_while_outliving=%" PRId64 "\n", during);
    printf("error_while_outliving=%s\n", message);
    printf("outliving_result_is_own=%d\n", green_held == own);
    int64_t after = lib.token();
    printf("token_after_outliving_is_own=%d\n", after == own);
    /* Y runs `nest`, which switches back here; `hold_token` switches to
     * Y, where `nest` returns and Y calls in, then back into it. */
    make_coroutine(&first_y, y_stack, size, &green_thread, first_y_main);
    CHECK(swapcontext(&first_thread, &first_y) == 0, "swapcontext");
    int64_t inner = lib.hold_token(1, first_inner_to_y);
    printf("token_after_outermost_returned=%" PRId64 "\n", first_during);
    printf("error_after_outermost_returned=%s\n", first_message);
    printf("inner_result_is_own=%d\n", inner == own);
    printf("token_after_inner_is_own=%d\n", lib.token() == own);
    CHECK(munmap(x_stack, size) == 0 && munmap(y_stack, size) == 0, "munmap");
    return NULL;
}

/* For the per-call runs below: X's callback is `nest_per_call`, and X and
 * Y get stacks of `kib` KiB mapped below the calling thread's. */
static size_t per_call_green_stacks(int kib, void **x_stack, void **y_stack) {
    size_t size = (size_t)kib * 1024;
    int here = 0;
    *x_stack = map_below((uintptr_t)&here, size);
    *y_stack = map_below((uintptr_t)&here, size);
    green_per_call = 1;
    return size;
}

/* Per call: the same on a thread that never bound, where the callback on
 * X (`nest_per_call`) releasing its context would release the Token. */
static void *interleaved_per_call_thread(void *raw) {
    void *x_stack, *y_stack;
    size_t size = per_call_green_stacks(*(int *)raw, &x_stack, &y_stack);
    int64_t during;
    outlive(x_stack, y_stack, size, &during, message);
    printf("per_call_token_while_outliving=%" PRId64 "\n", during);
    printf("per_call_error_while_outliving=%s\n", message);
    printf("per_call_held_is_after=%d\n",
           green_held > 0 && green_held == lib.token_per_call());
    CHECK(munmap(x_stack, size) == 0 && munmap(y_stack, size) == 0, "munmap");
    return NULL;
}

/* Per call, with Y's callback holding nothing: when the callback on X
 * returns, the one on Y may still resume on the context, so the context
 * stays bound to the thread instead of being released (and handed to
 * another thread) until the thread exits. */
static void *suspended_plain_per_call_thread(void *raw) {
    void *x_stack, *y_stack;
    size_t size = per_call_green_stacks(*(int *)raw, &x_stack, &y_stack);
    green_plain = 1;
    fixture_stats_t before = fixture_snapshot(&lib);
    make_coroutine(&green_y, y_stack, size, &green_thread, green_y_main);
    make_coroutine(&green_x, x_stack, size, &green_thread, green_x_main);
    CHECK(swapcontext(&green_thread, &green_x) == 0, "swapcontext");
    fixture_stats_t during = fixture_snapshot(&lib);
    printf("plain_bound_while_suspended=%" PRIu64 "\n",
           during.contexts_bound - before.contexts_bound);
    printf("plain_releases_while_suspended=%" PRIu64 "\n", during.releases - before.releases);
    CHECK(lib.plain(1) == 2, "a callback failed meanwhile");
    CHECK(swapcontext(&green_thread, &green_y) == 0, "swapcontext");
    CHECK(green_held == 0, "the suspended nest returned %" PRId64, green_held);
    green_plain = 0;
    CHECK(munmap(x_stack, size) == 0 && munmap(y_stack, size) == 0, "munmap");
    return NULL;
}

/* Per call, with the outermost callback left by longjmp rather than
 * returning: its C callee starts a coroutine whose callback (holding
 * nothing) suspends back, then jumps out. The thread's next callback finds
 * the outermost call gone and drops the suspended one's record with it;
 * that call may still resume on the context, which stays bound to the
 * thread (not released to another) until the thread exits. */
static jmp_buf *outermost_exit;

static int64_t start_y_then_jump(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&green_x, &green_y) == 0, "swapcontext");
    longjmp(*outermost_exit, 1);
}

/* Out of line, with the jump buffer in its frame: the abandoned callback's
 * frame lies below the frames of the thread's later callbacks. */
static __attribute__((noinline)) void abandon_outermost(void) {
    jmp_buf here;
    outermost_exit = &here;
    if (setjmp(here) == 0) {
        int64_t returned = lib.nest_per_call(1, start_y_then_jump);
        CHECK(0, "the outermost callback returned %" PRId64, returned);
    }
}

static void *abandoned_outermost_per_call_thread(void *raw) {
    size_t size = (size_t)*(int *)raw * 1024;
    int here = 0;
    void *y_stack = map_below((uintptr_t)&here, size);
    green_plain = 1;
    fixture_stats_t before = fixture_snapshot(&lib);
    make_coroutine(&green_y, y_stack, size, &green_thread, green_y_main);
    abandon_outermost();
    CHECK(lib.plain(1) == 2, "a callback after the jump failed");
    fixture_stats_t during = fixture_snapshot(&lib);
    printf("abandoned_bound_while_suspended=%" PRIu64 "\n",
           during.contexts_bound - before.contexts_bound);
    printf("abandoned_releases_while_suspended=%" PRIu64 "\n",
           during.releases - before.releases);
    CHECK(swapcontext(&green_thread, &green_y) == 0, "swapcontext");
    CHECK(green_held == 0, "the suspended nest returned %" PRId64, green_held);
    green_plain = 0;
    CHECK(munmap(y_stack, size) == 0, "munmap");
    return NULL;
}

/* Runs `thread` on a new thread, waits until no context is bound, and
 * prints what the run bound and released (the lines named `name`_…);
 * returns the statistics after it, for the next run's `before`. */
static fixture_stats_t exit_counts(const char *name, void *(*thread)(void *), int kib,
                                   fixture_stats_t before) {
    pthread_t id = fixture_spawn(thread, &kib, 0);
    fixture_join(id);
    fixture_stats_t after = fixture_wait_bound(&lib, 0, 10);
    printf("%s_bound_after_exit=%" PRIu64 "\n", name, after.contexts_bound);
    printf("%s_binds=%" PRIu64 "\n%s_releases=%" PRIu64 "\n", name, after.binds - before.binds,
           name, after.releases - before.releases);
    return after;
}

static void interleaved(int kib) {
    pthread_t id = fixture_spawn(interleaved_thread, &kib, 0);
    fixture_join(id);
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    before = exit_counts("per_call", interleaved_per_call_thread, kib, before);
    before = exit_counts("plain", suspended_plain_per_call_thread, kib, before);
    exit_counts("abandoned", abandoned_outermost_per_call_thread, kib, before);
}

/* --- a green-thread scheduler, at random -------------------------------- */

/* Tasks on coroutine stacks of one thread, switched at random: inside
 * callbacks that hold the Token (`hold_token_alone`, which tells whether
 * it had the value to itself), inside plain callbacks, inside calls nested
 * in those, and outside callbacks; resumed from the thread's own stack,
 * from a callback there, or from one holding the Token there. Callbacks
 * finish in whatever order the switches make. */
#define GREEN_TASKS 6
#define GREEN_STEPS 100

typedef struct {
    ucontext_t self;
    ucontext_t *resumer;
    void *stack;
    int done;
} green_task;

static green_task tasks[GREEN_TASKS];
static green_task *running_task;
static uint64_t green_seed;
static long green_alone, green_aliased, green_refused, green_failed;

static unsigned green_random(unsigned below) {
    green_seed = green_seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(green_seed >> 33) % below;
}

static void green_count(int64_t result) {
    if (result == 1) {
        green_alone++;
    } else if (result == 0) {
        green_aliased++;
    } else if (result == -2 && (fixture_last_error(&lib, message, sizeof message),
                                strstr(message, "already in use") != NULL)) {
        green_refused++;
    } else {
        green_failed++;
    }
}

/* The running task switches back to whoever resumed it. */
static int64_t green_yield(int32_t depth) {
    (void)depth;
    green_task *task = running_task;
    CHECK(swapcontext(&task->self, task->resumer) == 0, "swapcontext");
    return 0;
}

static int64_t green_hold_and_yield(int32_t depth) {
    (void)depth;
    green_count(lib.hold_token_alone(green_yield));
    return 0;
}

static void green_task_main(void) {
    for (int step = 0; step < GREEN_STEPS; step++) {
        switch (green_random(5)) {
        case 0: green_count(lib.hold_token_alone(green_yield)); break;
        case 1: CHECK(lib.nest(1, green_yield) == 0, "nest failed"); break;
        case 2: CHECK(lib.nest(1, green_hold_and_yield) == 0, "nest failed"); break;
        case 3: green_count(lib.hold_token_alone(NULL)); break;
        default: green_yield(0); break;
        }
    }
    running_task->done = 1;
    for (;;) green_yield(0); /* never resumed again */
}

static green_task *green_pick(void) {
    int left = 0;
    for (int i = 0; i < GREEN_TASKS; i++) left += !tasks[i].done;
    if (left == 0) return NULL;
    int skip = (int)green_random((unsigned)left);
    for (int i = 0; i < GREEN_TASKS; i++) {
        if (!tasks[i].done && skip-- == 0) return &tasks[i];
    }
    return NULL;
}

/* Runs a task until it switches back, from wherever this is called. */
static int64_t green_run_one(int32_t depth) {
    (void)depth;
    green_task *task = green_pick();
    if (task == NULL) return 0;
    ucontext_t here;
    task->resumer = &here;
    running_task = task;
    CHECK(swapcontext(&here, &task->self) == 0, "swapcontext");
    return 0;
}

static void *green_storm_thread(void *raw) {
    size_t size = 256 * 1024;
    int here = 0;
    for (int i = 0; i < GREEN_TASKS; i++) {
        /* Half below the thread's stack, half wherever malloc puts them. */
        tasks[i].stack = i % 2 ? malloc(size) : map_below((uintptr_t)&here, size);
        CHECK(tasks[i].stack != NULL, "out of memory");
        tasks[i].done = 0;
        make_coroutine(&tasks[i].self, tasks[i].stack, size, NULL, green_task_main);
    }
    while (green_pick() != NULL) {
        switch (green_random(4)) {
        case 0: green_run_one(0); break;
        case 1: CHECK(lib.nest(1, green_run_one) == 0, "nest failed"); break;
        case 2: green_count(lib.hold_token_alone(green_run_one)); break;
        default: green_count(lib.hold_token_alone(NULL)); break;
        }
    }
    /* Every task ended outside callbacks: the value is free again. */
    int64_t last = lib.hold_token_alone(NULL);
    *(int64_t *)raw = last;
    for (int i = 0; i < GREEN_TASKS; i++) {
        if (i % 2) {
            free(tasks[i].stack);
        } else {
            CHECK(munmap(tasks[i].stack, size) == 0, "munmap");
        }
    }
    return NULL;
}

static void green_storm(int rounds) {
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    long free_at_end = 0;
    for (int round = 0; round < rounds; round++) {
        green_seed = (uint64_t)round + 1;
        int64_t last = 0;
        pthread_t id = fixture_spawn(green_storm_thread, &last, 0);
        fixture_join(id);
        free_at_end += last == 1;
    }
    fixture_stats_t after = fixture_wait_bound(&lib, 0, 10);
    printf("rounds=%d\nfree_at_end=%ld\n", rounds, free_at_end);
    printf("alone=%ld\naliased=%ld\nrefused=%ld\nfailed=%ld\n", green_alone, green_aliased,
           green_refused, green_failed);
    printf("bound_after=%" PRIu64 "\nbinds=%" PRIu64 "\nreleases=%" PRIu64 "\n",
           after.contexts_bound, after.binds - before.binds, after.releases - before.releases);
}

#endif
