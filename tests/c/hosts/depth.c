/* Deep C -> Rust -> C -> Rust nesting and callbacks from unusual stacks.
 *
 *   depth FIXTURE nest DEPTH           bound: one context for the whole nest,
 *                                      released once, at thread exit
 *   depth FIXTURE nest-per-call DEPTH  per_call: one attachment, released at
 *                                      the outermost return
 *   depth FIXTURE small-stack KIB      callbacks (incl. a panic and an error)
 *                                      from a thread with a KIB KiB stack
 *   depth FIXTURE overflow KIB         a thread with a KIB KiB stack nests
 *                                      until it overflows: the process is
 *                                      expected to die of SIGSEGV
 *   depth FIXTURE swapcontext KIB      callbacks from a makecontext() stack of
 *                                      KIB KiB, interleaved with the thread's
 *                                      own stack
 *   depth FIXTURE green-storm ROUNDS   tasks on coroutine stacks switched at
 *                                      random inside and outside callbacks
 *                                      that hold a #[local] value: never two
 *                                      holders at once
 *   depth FIXTURE suspended KIB        a callback holding its #[local] value
 *                                      suspended on a KIB KiB coroutine stack
 *                                      below the thread's own, which calls in
 *                                      meanwhile: the value stays held
 *
 * The main thread never calls into the fixture. The modes on green threads
 * (interleaved, green-storm) are in depth_green_threads.h. */
#include "fixture_host.h"

#include <sys/resource.h>

/* musl has no swapcontext: there the swapcontext mode is not built. */
#ifdef __GLIBC__
#define HAVE_SWAPCONTEXT 1
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#endif

static fixture lib;

/* --- nesting ------------------------------------------------------------- */

static int per_call;
static int64_t first_token;
static long levels, token_mismatches;
static fixture_stats_t innermost;
static uintptr_t outermost_frame, innermost_frame;

/* Called by the fixture's nest callback with depth - 1: checks this level
 * still runs on the nest's context, then nests once more. */
static int64_t reenter(int32_t depth) {
    /* This frame's address at the first and the last level: the stack a
     * level of the nest takes (the callback's frames and this one's). */
    char here;
    if (levels == 0) outermost_frame = (uintptr_t)&here;
    innermost_frame = (uintptr_t)&here;
    levels++;
    int64_t token = lib.token();
    if (first_token == 0) first_token = token;
    if (token != first_token) token_mismatches++;
    if (depth == 0) {
        innermost = fixture_snapshot(&lib);
        return 0;
    }
    return per_call ? lib.nest_per_call(depth, reenter) : lib.nest(depth, reenter);
}

typedef struct {
    int depth;
    int64_t result;
    fixture_stats_t before, after_return;
} nest_args;

static void *nest_thread(void *raw) {
    nest_args *args = raw;
    args->before = fixture_snapshot(&lib);
    args->result = per_call ? lib.nest_per_call(args->depth, reenter)
                            : lib.nest(args->depth, reenter);
    args->after_return = fixture_snapshot(&lib);
    return NULL;
}

static void nest(int depth) {
    int state = fixture_wait_init(&lib, 30);
    CHECK(state == 0, "init did not become ready (state %d)", state);
    fixture_wait_bound(&lib, 0, 10);
    nest_args args = {.depth = depth};
    /* Each level is a C frame plus a debug-build Rust trampoline: give the
     * thread room (untouched stack pages cost nothing). */
    double started = fixture_now();
    pthread_t id = fixture_spawn(nest_thread, &args, (size_t)256 << 20);
    fixture_join(id);
    double elapsed = fixture_now() - started;
    fixture_stats_t after_exit = fixture_snapshot(&lib);
    const fixture_stats_t *b = &args.before, *r = &args.after_return;

    printf("depth=%d\nlevels=%ld\nseconds=%.3f\n", depth, levels, elapsed);
    if (levels > 1) {
        printf("stack_bytes_per_level=%lu\n",
               (unsigned long)((outermost_frame - innermost_frame) / (uintptr_t)(levels - 1)));
    }
    printf("binds_during=%" PRIu64 "\nbound_during=%" PRIu64 "\n", innermost.binds - b->binds,
           innermost.contexts_bound - b->contexts_bound);
    printf("releases_at_return=%" PRIu64 "\nreleases_at_exit=%" PRIu64 "\n",
           r->releases - b->releases, after_exit.releases - b->releases);
    printf("token_binds=%" PRIu64 "\ntoken_releases=%" PRIu64 "\n",
           after_exit.token_binds - b->token_binds, after_exit.token_releases - b->token_releases);

    CHECK(args.result == 0, "the nest returned %" PRId64, args.result);
    CHECK(levels == depth, "%ld C levels ran, expected %d", levels, depth);
    CHECK(token_mismatches == 0, "%ld levels ran on another context", token_mismatches);
    CHECK(innermost.binds - b->binds == 1, "%" PRIu64 " binds for one nested thread",
          innermost.binds - b->binds);
    CHECK(innermost.contexts_bound - b->contexts_bound == 1, "%" PRIu64 " contexts bound",
          innermost.contexts_bound - b->contexts_bound);
    CHECK(innermost.releases == b->releases, "released inside the nest");
    CHECK(after_exit.binds - b->binds == 1, "bound again after the nest");
    CHECK(after_exit.releases - b->releases == 1, "%" PRIu64 " releases, expected exactly 1",
          after_exit.releases - b->releases);
    CHECK(after_exit.contexts_bound == b->contexts_bound, "the thread's context leaked");
    CHECK(after_exit.token_binds - b->token_binds == 1 &&
              after_exit.token_releases - b->token_releases == 1,
          "Local::bind/release ran %" PRIu64 "/%" PRIu64 " times, expected once each",
          after_exit.token_binds - b->token_binds, after_exit.token_releases - b->token_releases);
    if (per_call) {
        CHECK(r->releases - b->releases == 1, "per_call: not released at the outermost return");
        CHECK(r->contexts_bound == b->contexts_bound, "per_call: still bound after return");
    } else {
        CHECK(r->releases == b->releases, "bound: released before the thread exited");
        CHECK(r->contexts_bound - b->contexts_bound == 1, "bound: not bound after return");
    }
}

/* --- unusual stacks -------------------------------------------------------- */

static char message[256];

/* How deep `exercise` nests: in a debug build a level takes about 1.8 KiB
 * of stack (the callback's frames and `reenter`'s), so 20 levels fit in a
 * 64 KiB stack with room to spare; at the 5 KiB a level took when debug
 * builds forced the whole call path inline, they did not. */
#define EXERCISE_NEST 20

/* A representative set of calls: first bind, #[local] state, an Err, a
 * caught panic, and a nest. Returns the context token. */
static int64_t exercise(const char *where) {
    int64_t token = lib.token();
    CHECK(token > 0, "%s: token() failed", where);
    CHECK(lib.work(41) == 42, "%s: work() failed", where);
    CHECK(lib.fail(7) == -1, "%s: fail() did not return its fallback", where);
    fixture_last_error(&lib, message, sizeof message);
    CHECK(strcmp(message, "asked to fail with 7") == 0, "%s: last error '%s'", where, message);
    CHECK(lib.panic(2) == -2, "%s: a panic did not return its fallback", where);
    fixture_last_error(&lib, message, sizeof message);
    CHECK(strstr(message, "formatted panic message 20") != NULL, "%s: last error '%s'", where,
          message);
    first_token = 0;
    levels = 0;
    CHECK(lib.nest(EXERCISE_NEST, reenter) == 0 && levels == EXERCISE_NEST &&
              token_mismatches == 0,
          "%s: nesting failed", where);
    CHECK(lib.token() == token, "%s: the context changed", where);
    return token;
}

static void *small_stack_thread(void *raw) {
    (void)raw;
    exercise("small stack thread");
    return NULL;
}

/* `kib`, or the least stack in KiB the C library allows a thread if that
 * is more (PTHREAD_STACK_MIN: 16 KiB on x86-64 glibc, 128 KiB on aarch64,
 * whose pages may be 64 KiB); prints that least as `stack_min_kib`. */
static int at_least_stack_min(int kib) {
    long least = sysconf(_SC_THREAD_STACK_MIN);
    CHECK(least > 0, "sysconf(_SC_THREAD_STACK_MIN) failed");
    int least_kib = (int)((least + 1023) / 1024);
    printf("stack_min_kib=%d\n", least_kib);
    return kib < least_kib ? least_kib : kib;
}

/* A thread with a KIB KiB stack, or the least the C library allows. */
static void small_stack(int kib) {
    kib = at_least_stack_min(kib);
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    pthread_t id = fixture_spawn(small_stack_thread, NULL, (size_t)kib * 1024);
    fixture_join(id);
    fixture_stats_t after = fixture_snapshot(&lib);
    CHECK(after.binds - before.binds == 1 && after.releases - before.releases == 1,
          "small stack: %" PRIu64 " binds, %" PRIu64 " releases", after.binds - before.binds,
          after.releases - before.releases);
    printf("stack_kib=%d\n", kib);
}

/* A thread that nests C -> Rust -> C without end on a stack of `kib` KiB
 * (or the C library's least): it reaches the guard page below its stack,
 * and the process gets SIGSEGV, as a C program recursing without end
 * does. Neither callgate nor Rust turns that into a panic or an error, and
 * a library must not take SIGSEGV's handler from its host. No core file:
 * the death is the expected outcome. */
static void *overflow_thread(void *raw) {
    (void)raw;
    CHECK(lib.token() > 0, "overflow: token() failed");
    printf("overflow_started=1\n");
    fflush(stdout);
    lib.nest(INT32_MAX, reenter);
    printf("overflow_returned=1\n");
    return NULL;
}

static void overflow(int kib) {
    struct rlimit no_core = {0, 0};
    CHECK(setrlimit(RLIMIT_CORE, &no_core) == 0, "setrlimit(RLIMIT_CORE): %s", strerror(errno));
    kib = at_least_stack_min(kib);
    printf("stack_kib=%d\n", kib);
    fflush(stdout);
    fixture_join(fixture_spawn(overflow_thread, NULL, (size_t)kib * 1024));
    FAIL("a thread nested %ld levels deep on a %d KiB stack and returned", levels, kib);
}

#ifdef HAVE_SWAPCONTEXT
/* Makes `context` run `entry` on `stack` (`size` bytes), then `link`. */
static void make_coroutine(ucontext_t *context, void *stack, size_t size, ucontext_t *link,
                           void (*entry)(void)) {
    CHECK(getcontext(context) == 0, "getcontext");
    context->uc_stack.ss_sp = stack;
    context->uc_stack.ss_size = size;
    context->uc_link = link;
    makecontext(context, entry, 0);
}

static ucontext_t thread_context, coroutine_context;
static int64_t coroutine_tokens[2];

static void coroutine(void) {
    coroutine_tokens[0] = exercise("swapcontext stack (first run)");
    swapcontext(&coroutine_context, &thread_context);
    coroutine_tokens[1] = exercise("swapcontext stack (resumed)");
    /* Returning follows uc_link back to the thread's stack. */
}

static void *swapcontext_thread(void *raw) {
    int kib = *(int *)raw;
    size_t size = (size_t)kib * 1024;
    void *stack = malloc(size);
    CHECK(stack, "out of memory");
    make_coroutine(&coroutine_context, stack, size, &thread_context, coroutine);
    /* First callbacks of this thread happen on the foreign stack. */
    CHECK(swapcontext(&thread_context, &coroutine_context) == 0, "swapcontext");
    int64_t own = exercise("thread stack, between the two coroutine runs");
    CHECK(swapcontext(&thread_context, &coroutine_context) == 0, "swapcontext");
    CHECK(coroutine_tokens[0] == own && coroutine_tokens[1] == own,
          "one thread, several stacks, several contexts: %" PRId64 " %" PRId64 " %" PRId64,
          coroutine_tokens[0], own, coroutine_tokens[1]);
    free(stack);
    return NULL;
}

/* --- a call suspended on another stack ---------------------------------- */

static ucontext_t holder_context, caller_context;
static int64_t held_result;

/* Called by `hold_token` while it holds the thread's Token: switches back
 * to the thread's own stack, leaving the callback suspended, and returns
 * when switched to again. */
static int64_t suspend(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&holder_context, &caller_context) == 0, "swapcontext");
    return 0;
}

static void holder(void) { held_result = lib.hold_token(1, suspend); }

/* `size` bytes mapped at a 16 MiB step below `here`, the first free. */
static void *map_below(uintptr_t here, size_t size) {
    for (uintptr_t step = 1; step <= 256; step++) {
        uintptr_t below = (here & ~(uintptr_t)0xffff) - step * ((uintptr_t)16 << 20);
        void *mapped = mmap((void *)below, size, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_FIXED_NOREPLACE, -1, 0);
        if (mapped == MAP_FAILED) continue;
        /* A kernel without MAP_FIXED_NOREPLACE takes the address as a hint. */
        if ((uintptr_t)mapped == below) return mapped;
        munmap(mapped, size);
    }
    FAIL("no room for a coroutine stack below the thread's");
}

static void *suspended_thread(void *raw) {
    int kib = *(int *)raw;
    size_t size = (size_t)kib * 1024;
    int64_t own = lib.token();
    CHECK(own > 0, "token() failed");
    /* The coroutine's stack goes below the thread's: there the suspended
     * call's frame is below every call the thread's own stack makes, where
     * a frame that is gone would be too. */
    void *stack = map_below((uintptr_t)&own, size);
    make_coroutine(&holder_context, stack, size, &caller_context, holder);
    /* Runs until `hold_token` is suspended inside its call to `suspend`. */
    CHECK(swapcontext(&caller_context, &holder_context) == 0, "swapcontext");
    int64_t during = lib.token();
    fixture_last_error(&lib, message, sizeof message);
    printf("token_while_suspended=%" PRId64 "\n", during);
    printf("error_while_suspended=%s\n", message);
    CHECK(lib.plain(1) == 2, "a callback without #[local] failed meanwhile");
    /* Resumes it: `hold_token` returns, and `holder` to here (uc_link). */
    CHECK(swapcontext(&caller_context, &holder_context) == 0, "swapcontext");
    printf("held_result_is_own=%d\n", held_result == own);
    int64_t after = lib.token();
    printf("token_after_is_own=%d\n", after == own);
    CHECK(munmap(stack, size) == 0, "munmap");
    return NULL;
}

/* --- a call abandoned on a coroutine stack that is then freed ------------ */

/* Inside an outermost callback, a coroutine on a stack of its own (mapped
 * below the thread's, where the abandoned call's frame is below the next
 * call's) makes a callback that is left by `longjmp`; the coroutine ends
 * and its stack is unmapped; a callback nested in the outermost one then
 * judges the abandoned call, whose frame it must not read. */
static ucontext_t freed_caller, freed_coroutine;
static jmp_buf freed_jump;
static void *freed_stack;
static size_t freed_size;

static int64_t freed_jump_out(int32_t depth) {
    (void)depth;
    longjmp(freed_jump, 1);
}

static void freed_main(void) {
    if (setjmp(freed_jump) == 0) {
        int64_t returned = lib.nest(1, freed_jump_out);
        CHECK(0, "the abandoned callback returned %" PRId64, returned);
    }
    /* Returning follows uc_link back to `freed_start`. */
}

static int64_t freed_start(int32_t depth) {
    (void)depth;
    make_coroutine(&freed_coroutine, freed_stack, freed_size, &freed_caller, freed_main);
    CHECK(swapcontext(&freed_caller, &freed_coroutine) == 0, "swapcontext");
    CHECK(munmap(freed_stack, freed_size) == 0, "munmap");
    return lib.plain(41);
}

static void freed_coroutine_stack(int kib) {
    freed_size = (size_t)kib * 1024;
    int here = 0;
    freed_stack = map_below((uintptr_t)&here, freed_size);
    int64_t nested = lib.nest(1, freed_start);
    printf("nested_after_unmap=%" PRId64 "\n", nested);
    printf("plain_after=%d\n", lib.plain(1));
}

/* After the helpers above, which they use. */
#include "depth_green_threads.h"

static void suspended(int kib) {
    pthread_t id = fixture_spawn(suspended_thread, &kib, 0);
    fixture_join(id);
}

static void swapcontext_stack(int kib) {
    fixture_stats_t before = fixture_wait_bound(&lib, 0, 10);
    pthread_t id = fixture_spawn(swapcontext_thread, &kib, 0);
    fixture_join(id);
    fixture_stats_t after = fixture_snapshot(&lib);
    CHECK(after.binds - before.binds == 1 && after.releases - before.releases == 1,
          "swapcontext: %" PRIu64 " binds, %" PRIu64 " releases", after.binds - before.binds,
          after.releases - before.releases);
    printf("coroutine_stack_kib=%d\n", kib);
}
#endif

/* Runs `mode` if it is one of the modes that switch stacks with
 * ucontext (built where the C library has swapcontext); false otherwise. */
static int run_ucontext_mode(const char *mode, int size) {
#ifdef HAVE_SWAPCONTEXT
    static const struct {
        const char *name;
        void (*run)(int size);
        int size;
    } modes[] = {
        {"swapcontext", swapcontext_stack, 64},
        {"suspended", suspended, 64},
        {"interleaved", interleaved, 64},
        {"green-storm", green_storm, 20},
        {"freed-coroutine", freed_coroutine_stack, 64},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(mode, modes[i].name) == 0) {
            modes[i].run(size > 0 ? size : modes[i].size);
            return 1;
        }
    }
#else
    (void)mode;
    (void)size;
#endif
    return 0;
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "nest";
    int size = argc > 3 ? atoi(argv[3]) : 0;
    fixture_open(&lib, path, RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init did not become ready");
    if (strcmp(mode, "nest") == 0) {
        nest(size > 0 ? size : 1000);
    } else if (strcmp(mode, "nest-per-call") == 0) {
        per_call = 1;
        nest(size > 0 ? size : 1000);
    } else if (strcmp(mode, "small-stack") == 0) {
        small_stack(size > 0 ? size : 64);
    } else if (strcmp(mode, "overflow") == 0) {
        overflow(size > 0 ? size : 64);
    } else if (!run_ucontext_mode(mode, size)) {
#ifdef HAVE_SWAPCONTEXT
        FAIL("unknown mode %s", mode);
#else
        FAIL("unknown mode %s (the stack-switching modes are not built: this C library has "
             "no swapcontext)", mode);
#endif
    }
    printf("result=ok\n");
    return 0;
}
