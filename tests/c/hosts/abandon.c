/* Callbacks whose frames are abandoned by C code running inside them, the
 * way C libraries end a call early, against the dlopen()ed fixture.
 *
 *   abandon FIXTURE longjmp THREADS    libpng-style error handling: each
 *                                      thread sets a jump point, calls
 *                                      `hold_token` (which holds the
 *                                      thread's #[local] Token) with a C
 *                                      function that longjmps back out of
 *                                      it, then calls the same callback
 *                                      1 000 times; the Token is usable
 *                                      again at once; then the same with
 *                                      the jump landing inside an outer
 *                                      callback (`nest`), which returns
 *   abandon FIXTURE longjmp-per-call THREADS
 *                                      the same out of an `attach =
 *                                      per_call` nest on a thread that is
 *                                      not bound: half the threads exit
 *                                      right after the jump (the exit hook
 *                                      releases the abandoned per-call
 *                                      context), half call on (the next
 *                                      outermost return releases it)
 *   abandon FIXTURE exit THREADS       pthread_exit in C code nested in a
 *                                      callback that holds the Token
 *   abandon FIXTURE exit-first THREADS
 *                                      the same in the thread's first call
 *                                      (it binds the thread)
 *   abandon FIXTURE exit-remembered THREADS
 *                                      the same after a call of the same
 *                                      callback, whose fast path finds the
 *                                      Token it remembers
 *   abandon FIXTURE exit-nested THREADS
 *                                      the same in a call nested in `nest`
 *   abandon FIXTURE exit-per-call THREADS
 *                                      pthread_exit in C code nested in an
 *                                      `attach = per_call` nest on a thread
 *                                      that is not bound: the exit hook
 *                                      releases the per-call context
 *   abandon FIXTURE exit-unwinding-first THREADS
 *                                      pthread_exit in the thread's first
 *                                      call of `hold_token_unwinding`,
 *                                      whose C function is declared
 *                                      `extern "C-unwind"`: the process
 *                                      aborts naming the callback (glibc)
 *   abandon FIXTURE exit-unwinding-bound THREADS
 *                                      the same on a bound thread, in a
 *                                      call the fast path serves
 *   abandon FIXTURE cancel THREADS     a deferred pthread_cancel acted on
 *                                      there
 *   abandon FIXTURE async-cancel THREADS
 *                                      an asynchronous cancellation there
 *
 * Threads run 8 at a time. After every wave no context is bound, so each
 * thread's context was released (and its Token's `release` ran) when it
 * exited. At the end the host prints its counters and `result=ok`. */
#include "fixture_host.h"

#include <sched.h>
#include <setjmp.h>
#include <stdatomic.h>

static fixture lib;

enum { WAVE = 8, CALLS_AFTER = 1000 };

typedef enum {
    LONGJMP,
    LONGJMP_PER_CALL,
    EXIT,
    EXIT_FIRST,
    EXIT_REMEMBERED,
    EXIT_NESTED,
    EXIT_PER_CALL,
    EXIT_UNWINDING_FIRST,
    EXIT_UNWINDING_BOUND,
    CANCEL,
    ASYNC_CANCEL
} scenario;

static _Thread_local jmp_buf *jump_point;
static atomic_int inside[WAVE];

static int64_t jump_out(int32_t depth) {
    (void)depth;
    longjmp(*jump_point, 1);
}

static int64_t exit_inside(int32_t depth) {
    (void)depth;
    pthread_exit(NULL);
}

static _Thread_local int slot;

static int64_t wait_for_cancel(int32_t depth) {
    (void)depth;
    atomic_store(&inside[slot], 1);
    for (;;) pause(); /* a cancellation point */
    return 0;
}

static int64_t spin_for_cancel(int32_t depth) {
    (void)depth;
    int old;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
    atomic_store(&inside[slot], 1);
    /* Spins, yielding now and then so that the main thread, which
     * cancels, and the next threads of the wave get a core: the
     * cancellation lands in the loop or in the yield. */
    for (volatile unsigned long spin = 0;; spin++) {
        if (spin % 4096 == 0) sched_yield();
    }
    return 0;
}

/* `hold_token` called from inside `nest`: a nested call that ends the
 * thread. */
static int64_t hold_token_exit_inside(int32_t depth) {
    (void)depth;
    return lib.hold_token(1, exit_inside);
}

/* Asks for the Token while an outer call holds it: -2 (the error). */
static int64_t hold_again(int32_t depth) {
    return lib.hold_token(depth, NULL);
}

typedef struct {
    scenario what;
    int slot;
    int ok;
} worker;

/* The host function that handles the library's errors with setjmp: it
 * calls `hold_token`, whose nested C call jumps back here. */
static int jump_out_of_hold_token(void) {
    jmp_buf here;
    jump_point = &here;
    if (setjmp(here) == 0) {
        lib.hold_token(1, jump_out);
        return 0; /* not reached */
    }
    return 1;
}

/* Called by `nest`: a host function inside an outer callback that handles
 * errors with setjmp. It calls `hold_token`, nested in `nest`, whose C call
 * jumps back here, and returns 0: the outer callback returns with the
 * nested call abandoned. */
static int64_t jump_out_of_nested_hold(int32_t depth) {
    (void)depth;
    jmp_buf here;
    jmp_buf *outer = jump_point;
    jump_point = &here;
    if (setjmp(here) == 0) {
        lib.hold_token(1, jump_out);
        return -100; /* not reached */
    }
    jump_point = outer;
    return 0;
}

/* `hold_token` under `depth` levels of `nest`: the Token's id, or -2 if a
 * call is found holding it. */
static int64_t hold_token_deeper(int32_t depth) {
    return depth > 0 ? lib.nest(depth, hold_token_deeper) : lib.hold_token(0, NULL);
}

static int jump_out_of_nest_per_call(void) {
    jmp_buf here;
    jump_point = &here;
    if (setjmp(here) == 0) {
        lib.nest_per_call(1, jump_out);
        return 0;
    }
    return 1;
}

static void *run_worker(void *raw) {
    worker *w = raw;
    slot = w->slot;
    if (w->what == EXIT_FIRST) {
        /* The thread's first call: the trampoline's path for an unbound
         * thread. */
        lib.hold_token(1, exit_inside);
        return NULL; /* not reached */
    }
    if (w->what == EXIT_UNWINDING_FIRST) {
        lib.hold_token_unwinding(exit_inside);
        return NULL; /* not reached */
    }
    if (w->what == EXIT_PER_CALL) {
        /* Not bound: the nest attaches per call, and the thread ends in it. */
        lib.nest_per_call(1, exit_inside);
        return NULL; /* not reached */
    }
    if (w->what == LONGJMP_PER_CALL) {
        /* Not bound: the nest attaches per call, and is abandoned. */
        if (!jump_out_of_nest_per_call()) return NULL;
        if (w->slot % 2 == 0) {
            for (int i = 0; i < CALLS_AFTER; i++) {
                if (lib.plain(i) != i + 1) return NULL;
            }
            if (lib.token() <= 0) return NULL;
        }
        w->ok = 1;
        return NULL;
    }
    int64_t token = lib.token();
    if (token <= 0) return NULL;
    switch (w->what) {
    case LONGJMP: {
        if (!jump_out_of_hold_token()) return NULL;
        /* The same callback again, from the same place: its #[local] value
         * is free again, and the thread keeps its context. */
        for (int i = 0; i < CALLS_AFTER; i++) {
            if (lib.hold_token(0, NULL) != token) return NULL;
        }
        if (lib.token() != token) return NULL;
        /* A nested call asking for the held Token still gets an error. */
        if (lib.hold_token(1, hold_again) != -2) return NULL;
        lib.clear_last_error();
        /* And it survives another jump. */
        if (!jump_out_of_hold_token()) return NULL;
        if (lib.hold_token(0, NULL) != token) return NULL;
        /* A call nested in `nest` holds the Token and is abandoned by a jump
         * that lands inside `nest`, which returns: the Token is free again,
         * three callbacks deep as at the top. */
        if (lib.nest(1, jump_out_of_nested_hold) != 0) return NULL;
        if (lib.nest(2, hold_token_deeper) != token) return NULL;
        if (lib.hold_token(0, NULL) != token) return NULL;
        if (lib.token() != token) return NULL;
        break;
    }
    case LONGJMP_PER_CALL:
    case EXIT_FIRST:
    case EXIT_PER_CALL:
        break; /* handled above */
    case EXIT:
        lib.hold_token(1, exit_inside);
        return NULL; /* not reached */
    case EXIT_REMEMBERED:
        if (lib.hold_token(0, NULL) != token) return NULL;
        lib.hold_token(1, exit_inside);
        return NULL;
    case EXIT_NESTED:
        lib.nest(1, hold_token_exit_inside);
        return NULL;
    case EXIT_UNWINDING_FIRST:
        break; /* handled above */
    case EXIT_UNWINDING_BOUND:
        if (lib.hold_token_unwinding(NULL) != token) return NULL;
        lib.hold_token_unwinding(exit_inside);
        return NULL;
    case CANCEL:
        lib.hold_token(1, wait_for_cancel);
        return NULL;
    case ASYNC_CANCEL:
        lib.hold_token(1, spin_for_cancel);
        return NULL;
    }
    w->ok = 1;
    return NULL;
}

static void run(scenario what, int threads) {
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    CHECK(before.contexts_bound == 0, "contexts bound before the run");
    worker workers[WAVE];
    pthread_t ids[WAVE];
    int ended = 0;
    for (int done = 0; done < threads; done += WAVE) {
        int n = threads - done < WAVE ? threads - done : WAVE;
        for (int i = 0; i < n; i++) {
            workers[i] = (worker){.what = what, .slot = i, .ok = 0};
            atomic_store(&inside[i], 0);
            ids[i] = fixture_spawn(run_worker, &workers[i], 0);
        }
        if (what == CANCEL || what == ASYNC_CANCEL) {
            for (int i = 0; i < n; i++) {
                while (!atomic_load(&inside[i])) fixture_sleep_ms(1);
                CHECK(pthread_cancel(ids[i]) == 0, "pthread_cancel");
            }
        }
        for (int i = 0; i < n; i++) {
            void *result = NULL;
            CHECK(pthread_join(ids[i], &result) == 0, "pthread_join");
            if (what == CANCEL || what == ASYNC_CANCEL) {
                CHECK(result == PTHREAD_CANCELED, "thread %d was not cancelled", done + i);
                ended++;
            } else if (what == EXIT || what == EXIT_FIRST || what == EXIT_REMEMBERED ||
                       what == EXIT_NESTED || what == EXIT_PER_CALL ||
                       what == EXIT_UNWINDING_FIRST || what == EXIT_UNWINDING_BOUND) {
                ended++;
            } else {
                CHECK(workers[i].ok, "thread %d: a call failed after the jump", done + i);
            }
        }
        fixture_stats_t now = fixture_wait_bound(&lib, 0, 10);
        CHECK(now.contexts_bound == 0, "after the wave at %d: %" PRIu64 " contexts still bound",
              done, now.contexts_bound);
    }
    fixture_stats_t after = fixture_snapshot(&lib);
    printf("threads=%d\nended_inside=%d\n", threads, ended);
    printf("contexts_created_during_run=%" PRIu64 "\n",
           after.contexts_created - before.contexts_created);
    printf("token_binds_during_run=%" PRIu64 "\n", after.token_binds - before.token_binds);
    printf("token_releases_during_run=%" PRIu64 "\n",
           after.token_releases - before.token_releases);
    fixture_print_stats("", &after);
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    fixture_open(&lib, path, RTLD_NOW);
    const char *mode = argc > 2 ? argv[2] : "longjmp";
    int threads = argc > 3 ? atoi(argv[3]) : 1000;
    static const struct {
        const char *name;
        scenario what;
    } modes[] = {
        {"longjmp", LONGJMP},
        {"longjmp-per-call", LONGJMP_PER_CALL},
        {"exit", EXIT},
        {"exit-first", EXIT_FIRST},
        {"exit-remembered", EXIT_REMEMBERED},
        {"exit-nested", EXIT_NESTED},
        {"exit-per-call", EXIT_PER_CALL},
        {"exit-unwinding-first", EXIT_UNWINDING_FIRST},
        {"exit-unwinding-bound", EXIT_UNWINDING_BOUND},
        {"cancel", CANCEL},
        {"async-cancel", ASYNC_CANCEL},
    };
    size_t found = 0;
    while (found < sizeof modes / sizeof modes[0] && strcmp(mode, modes[found].name) != 0) found++;
    if (found == sizeof modes / sizeof modes[0]) FAIL("unknown mode %s", mode);
    scenario what = modes[found].what;
    run(what, threads);
    printf("result=ok\n");
    return 0;
}
