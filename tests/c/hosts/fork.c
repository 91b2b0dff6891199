/* fork() while other threads bind and release contexts in a tight loop.
 *
 *   fork FIXTURE FORKS
 *
 * Four churn threads keep the runtime busy: two create short-lived threads
 * that bind (pop a context) and exit (push it back), two make per-call
 * callbacks (attach and release around each call). Meanwhile the main
 * thread forks FORKS times, in turn
 *   - from the main thread, which is bound,
 *   - from inside a callback (the child returns out of it),
 *   - from a thread that never called back (the child's only thread binds),
 *   - from a thread that made only per-call callbacks (it keeps its
 *     released context aside, which stays its own in the child).
 * Each child makes callbacks (plain, #[local], per-call, Err, caught panic)
 * on its thread and on a new thread, must find the two threads on different
 * contexts and only its own thread's context bound (the parent's other
 * threads' contexts were reclaimed), and must exit 0 within 5 seconds. */
#include "fixture_host.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

static fixture lib;
static atomic_int stop;
static atomic_long churn_binds, churn_calls;

static void *short_lived(void *raw) {
    (void)raw;
    if (lib.token() > 0 && lib.work(1) == 2) atomic_fetch_add(&churn_binds, 1);
    return NULL;
}

static void *churn_threads(void *raw) {
    (void)raw;
    while (!atomic_load(&stop)) fixture_join(fixture_spawn(short_lived, NULL, 0));
    return NULL;
}

static void *churn_per_call(void *raw) {
    (void)raw;
    while (!atomic_load(&stop)) {
        if (lib.plain_per_call(1) == 2 && lib.token_per_call() > 0)
            atomic_fetch_add(&churn_calls, 1);
    }
    return NULL;
}

/* --- in the child ------------------------------------------------------------ */

/* 0 if every callback worked, else the number of the failed check. */
static int child_calls(void) {
    char message[256];
    if (lib.token() <= 0) return 10;
    if (lib.work(41) != 42) return 11;
    if (lib.plain_per_call(1) != 2) return 12;
    if (lib.token_per_call() <= 0) return 13;
    if (lib.fail(5) != -1) return 14;
    fixture_last_error(&lib, message, sizeof message);
    if (strcmp(message, "asked to fail with 5") != 0) return 15;
    if (lib.panic(1) != -2) return 16;
    return 0;
}

static int64_t child_thread_token;

static void *child_thread(void *raw) {
    (void)raw;
    int rc = child_calls();
    child_thread_token = lib.token();
    return (void *)(intptr_t)rc;
}

enum { CHILD_STACK = 256 * 1024 };

/* Everything a child does; returns its exit status.
 *
 * The child's thread gets a stack of its own rather than one from glibc's
 * cache: glibc 2.36 frees a cached stack's blocks of dynamic TLS when a
 * new thread takes it, after taking it off the cache list, and a child
 * forked while another thread of the parent was doing so gets that stack
 * back in its cache with the blocks already freed; its first
 * pthread_create may then free them again ("double free or corruption").
 * It shows where the fixture's TLS is dynamic (the portable build), with
 * the churn threads creating threads while the main thread forks. */
static int child_main(void) {
    int rc = child_calls();
    if (rc) return rc;
    void *stack = NULL;
    if (posix_memalign(&stack, 64, CHILD_STACK) != 0) return 25;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setstack(&attr, stack, CHILD_STACK) != 0)
        return 26;
    pthread_t id;
    if (pthread_create(&id, &attr, child_thread, NULL) != 0) return 20;
    pthread_attr_destroy(&attr);
    void *result = NULL;
    if (pthread_join(id, &result) != 0) return 21;
    free(stack);
    if (result != NULL) return 30 + (int)(intptr_t)result;
    if (child_calls() != 0) return 22;
    /* Both threads were bound at once: one context each. */
    if (lib.token() == child_thread_token) return 24;
    /* The parent's other threads do not exist here: their contexts went
     * back to the free list at fork, so only this thread's is bound. */
    fixture_stats_t after = fixture_snapshot(&lib);
    if (after.contexts_bound != 1) {
        fixture_print_stats("child_", &after);
        fflush(stdout);
        return 23;
    }
    return 0;
}

/* --- in the parent -------------------------------------------------------------- */

static pid_t forked_pid;
static int in_child;
static int child_status_code;

/* fork() and, in the child, run the checks. */
static void fork_here(void) {
    forked_pid = fork();
    CHECK(forked_pid >= 0, "fork: %s", strerror(errno));
    if (forked_pid == 0) {
        in_child = 1;
        child_status_code = child_main();
    }
}

/* Called by the fixture's nest callback: fork from inside a callback. */
static int64_t fork_inside_callback(int32_t depth) {
    (void)depth;
    fork_here();
    return 0;
}

static void *fork_from_fresh_thread(void *raw) {
    (void)raw;
    fork_here();
    if (in_child) _exit(child_status_code);
    return NULL;
}

static void *fork_from_per_call_thread(void *raw) {
    (void)raw;
    CHECK(lib.plain_per_call(1) == 2 && lib.token_per_call() > 0, "per-call calls failed");
    fork_here();
    if (in_child) _exit(child_status_code);
    return NULL;
}

static void wait_child(pid_t pid, int variant, int iteration, double *max_seconds) {
    double started = fixture_now();
    int status = 0;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        CHECK(done >= 0, "waitpid: %s", strerror(errno));
        if (done == pid) break;
        if (fixture_now() - started > 5.0) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            FAIL("fork %d (variant %d): the child did not exit within 5 s", iteration, variant);
        }
        fixture_sleep_ms(1);
    }
    double seconds = fixture_now() - started;
    if (seconds > *max_seconds) *max_seconds = seconds;
    CHECK(WIFEXITED(status), "fork %d (variant %d): the child died of signal %d", iteration,
          variant, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    CHECK(WEXITSTATUS(status) == 0, "fork %d (variant %d): the child exited %d", iteration,
          variant, WEXITSTATUS(status));
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    int forks = argc > 2 ? atoi(argv[2]) : 200;
    fixture_open(&lib, path, RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    CHECK(lib.token() > 0, "main thread call failed");

    pthread_t churners[4];
    churners[0] = fixture_spawn(churn_threads, NULL, 0);
    churners[1] = fixture_spawn(churn_threads, NULL, 0);
    churners[2] = fixture_spawn(churn_per_call, NULL, 0);
    churners[3] = fixture_spawn(churn_per_call, NULL, 0);
    /* Let the churn get going. */
    while (atomic_load(&churn_binds) < 10 || atomic_load(&churn_calls) < 10) fixture_sleep_ms(1);

    double started = fixture_now(), max_child = 0;
    for (int i = 0; i < forks; i++) {
        int variant = i % 4;
        pid_t pid;
        if (variant == 0) {
            fork_here();
            if (in_child) _exit(child_status_code);
            pid = forked_pid;
        } else if (variant == 1) {
            int64_t nested = lib.nest(1, fork_inside_callback);
            /* The child has returned out of the callback, too. */
            if (in_child) _exit(nested == 0 ? child_status_code : 40);
            CHECK(nested == 0, "nest returned %" PRId64, nested);
            pid = forked_pid;
        } else if (variant == 2) {
            fixture_join(fixture_spawn(fork_from_fresh_thread, NULL, 0));
            pid = forked_pid;
        } else {
            fixture_join(fixture_spawn(fork_from_per_call_thread, NULL, 0));
            pid = forked_pid;
        }
        wait_child(pid, variant, i, &max_child);
    }
    double elapsed = fixture_now() - started;
    atomic_store(&stop, 1);
    for (int i = 0; i < 4; i++) fixture_join(churners[i]);
    /* Only the main thread stays bound in the parent (the init thread may
     * still be on its way out). */
    fixture_stats_t stats = fixture_wait_bound(&lib, 1, 10);
    printf("forks=%d\nseconds=%.3f\nmax_child_seconds=%.3f\n", forks, elapsed, max_child);
    printf("churn_binds=%ld\nchurn_per_call=%ld\n", atomic_load(&churn_binds),
           atomic_load(&churn_calls));
    fixture_print_stats("", &stats);
    CHECK(stats.contexts_bound == 1, "%" PRIu64 " contexts bound at the end",
          stats.contexts_bound);
    printf("result=ok\n");
    return 0;
}
