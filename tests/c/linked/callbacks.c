/* Callbacks for C APIs that take a `void *`, from C, through the header
 * callgate generates from the fixture (tests/fixture, `callbacks` module):
 * `local` callbacks reached through the exported table `fixture_callbacks`
 * with Rust state as their user data (glibc's qsort_r, C threads), and
 * closures as (function, data, free) — called from C threads, freed on
 * another thread, freed while a call is in flight, once closures as
 * pthread_create start routines.
 *
 * Compiled by the test (tests/hosts/callbacks.rs) against the generated header,
 * like data.c.
 *
 *   callbacks table          the table, qsort_r with a counted comparator,
 *                            NULL user data, a panicking comparison
 *   callbacks threads T N    T threads × N calls on shared user data and on
 *                            one FnMut closure, every thread bound before
 *                            any makes them
 *   callbacks closures N     N closures and N once closures made, called and
 *                            freed; a closure freed while a call is in it
 *   callbacks abandon N      N calls of an FnMut closure left by longjmp out
 *                            of C code inside them, each followed by calls
 *                            on the same thread and on another; one on a
 *                            thread that exits, followed by a call on the
 *                            next thread
 *   callbacks handed-on      calls of an FnMut closure left by longjmp
 *                            inside a per-call callback, whose context then
 *                            goes to another thread: at the exit of the
 *                            thread that cached it, and from a thread that
 *                            still lives (its key destructor, after its exit
 *                            hook ran)
 *                            (abandon and handed-on: with FIXTURE_INIT=none)
 *   callbacks suspended      a call suspended inside an FnMut closure on a
 *                            coroutine stack while the callback it started
 *                            under returns (glibc: swapcontext)
 *   callbacks concurrent T N T threads × N calls of one concurrent (Fn)
 *                            closure, half of them bound first, with nested
 *                            calls; the closure freed while T calls are
 *                            inside it, and as T calls return; calls left
 *                            by longjmp, whose thread keeps the closure
 *                            until it exits; fork with a call inside it
 *                            (not with no-fork: helgrind takes the child's
 *                            reclaim of the parent's threads' contexts for
 *                            races with those threads)
 *   callbacks misuse CASE    one misuse of a closure C owns, which must abort
 *                            the process with a message naming the closure:
 *                            free-twice, free-twice-in-call (the second
 *                            free while a call is inside it),
 *                            free-twice-concurrent, call-after-free (of an
 *                            FnMut closure, caught before its body runs),
 *                            once-twice, once-called-then-freed,
 *                            once-freed-then-called
 *
 * Every mode ends by checking that every Rust value it made was dropped
 * exactly once (fixture_values_live() back where it was). Prints
 * `key=value` lines and `result=ok`; a failed check prints
 * `FAIL: file:line: message` on stderr and exits 1. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <ucontext.h>
#endif

#include "fixture.h"
#include "check.h"

typedef int32_t (*adder_fn)(void *, int32_t);
typedef void (*release_fn)(void *);
typedef void *(*start_fn)(void *);

/* ------------------------------------------------------------------------ */
/* The table and user data                                                   */
/* ------------------------------------------------------------------------ */

static void table(void) {
    int64_t live = fixture_values_live();
    const FixtureCallbacks *callbacks = &fixture_callbacks;
    CHECK(callbacks->fixture_compare_counted && callbacks->fixture_add_shared &&
              callbacks->fixture_sort_counter_destroy && callbacks->fixture_shared_total_destroy,
          "a table entry is NULL");

    /* glibc's qsort_r with the table's comparator and Rust state. */
    enum { N = 1000 };
    int32_t values[N];
    for (int i = 0; i < N; i++) values[i] = (int32_t)((i * 7919) % 1009) - 500;
    void *counter = fixture_sort_counter_new();
    CHECK(counter != NULL, "no counter");
    CHECK(fixture_values_live() == live + 1, "the counter is alive");
    qsort_r(values, N, sizeof values[0], callbacks->fixture_compare_counted, counter);
    for (int i = 1; i < N; i++) CHECK(values[i - 1] <= values[i], "unsorted at %d", i);
    int64_t comparisons = fixture_sort_counter_comparisons(counter);
    CHECK(comparisons >= N - 1, "%lld comparisons", (long long)comparisons);
    printf("comparisons=%lld\n", (long long)comparisons);

    /* A panicking comparison compares equal; qsort_r carries on. */
    int32_t poisoned[] = {3, INT32_MIN, 1, 2};
    qsort_r(poisoned, 4, sizeof poisoned[0], callbacks->fixture_compare_counted, counter);
    CHECK(strstr(last_error(), "panicked: INT32_MIN cannot be ordered") != NULL, "last error: %s",
          last_error());
    callbacks->fixture_sort_counter_destroy(counter);
    CHECK(fixture_values_live() == live, "the counter was dropped");

    /* NULL user data is an error naming the argument. */
    CHECK(callbacks->fixture_add_shared(NULL, 1) == -1, "NULL total accepted");
    CHECK(strcmp(last_error(), "argument `total` is NULL") == 0, "last error: %s", last_error());
    CHECK(fixture_shared_total_get(NULL) == INT64_MIN, "NULL total read");
    CHECK(fixture_sort_counter_comparisons(NULL) == -1, "NULL counter read");
    /* Destroying NULL is a no-op. */
    callbacks->fixture_shared_total_destroy(NULL);
    CHECK(fixture_values_live() == live, "every value dropped once");
}

/* ------------------------------------------------------------------------ */
/* Threads                                                                   */
/* ------------------------------------------------------------------------ */

struct worker {
    pthread_t thread;
    pthread_barrier_t *bound;
    void *total;
    adder_fn add;
    void *adder;
    int calls;
    int failures;
};

static void *work(void *arg) {
    struct worker *worker = arg;
    /* Every thread binds its context (a first callback) before any makes
     * the calls: no thread exits and hands its context to another before
     * the others are done, so each call into the FnMut closure is ordered
     * with the other threads' by the closure's turns alone (what helgrind
     * checks, scripts/valgrind.sh), not by a context passed on. */
    if (fixture_shared_total_get(worker->total) < 0) worker->failures++;
    pthread_barrier_wait(worker->bound);
    for (int i = 0; i < worker->calls; i++) {
        if (fixture_callbacks.fixture_add_shared(worker->total, 1) != 1) worker->failures++;
        if (worker->add(worker->adder, 1) < 0) worker->failures++;
    }
    return NULL;
}

struct release_job {
    release_fn release;
    void *data;
};

static void *release_on_thread(void *arg) {
    struct release_job *job = arg;
    job->release(job->data);
    return NULL;
}

/* Calls release(data) on a new thread, and waits for it. */
static void release_elsewhere(release_fn release, void *data) {
    struct release_job job = {release, data};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, release_on_thread, &job) == 0, "pthread_create");
    pthread_join(thread, NULL);
}

static void threads(int count, int calls) {
    int64_t live = fixture_values_live();
    void *total = fixture_shared_total_new();
    adder_fn add = NULL;
    release_fn release = NULL;
    void *adder = fixture_adder_new(0, &add, &release);
    CHECK(total && adder && add && release, "made the state and the closure");
    struct worker *workers = calloc((size_t)count, sizeof *workers);
    CHECK(workers != NULL, "out of memory");
    pthread_barrier_t bound;
    CHECK(pthread_barrier_init(&bound, NULL, (unsigned)count) == 0, "pthread_barrier_init");
    for (int i = 0; i < count; i++) {
        workers[i] = (struct worker){
            .bound = &bound, .total = total, .add = add, .adder = adder, .calls = calls};
        CHECK(pthread_create(&workers[i].thread, NULL, work, &workers[i]) == 0, "pthread_create");
    }
    int failures = 0;
    for (int i = 0; i < count; i++) {
        pthread_join(workers[i].thread, NULL);
        failures += workers[i].failures;
    }
    pthread_barrier_destroy(&bound);
    free(workers);
    int64_t expected = (int64_t)count * calls;
    CHECK(failures == 0, "%d calls failed", failures);
    CHECK(fixture_shared_total_get(total) == expected, "total %lld, expected %lld",
          (long long)fixture_shared_total_get(total), (long long)expected);
    /* The FnMut's running sum saw every call, none lost to an overlap. */
    CHECK(add(adder, 0) == expected, "running sum %d, expected %lld", add(adder, 0),
          (long long)expected);
    fixture_callbacks.fixture_shared_total_destroy(total);
    release_elsewhere(release, adder);
    CHECK(fixture_values_live() == live, "every value dropped once");
    printf("calls=%lld\n", (long long)expected * 2);
}

/* ------------------------------------------------------------------------ */
/* Closures                                                                  */
/* ------------------------------------------------------------------------ */

struct call_job {
    adder_fn add;
    void *data;
    int32_t value;
    int32_t result;
};

static void *call_on_thread(void *arg) {
    struct call_job *job = arg;
    job->result = job->add(job->data, job->value);
    return NULL;
}

/* add(data, value) on a new thread, waited for; returns its result. */
static int32_t call_on_new_thread(adder_fn add, void *data, int32_t value) {
    struct call_job job = {add, data, value, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, call_on_thread, &job) == 0, "pthread_create");
    pthread_join(thread, NULL);
    return job.result;
}

static void closures(int n) {
    int64_t live = fixture_values_live();
    uint64_t dropped = fixture_values_dropped();
    for (int i = 0; i < n; i++) {
        adder_fn add = NULL;
        release_fn release = NULL;
        void *adder = fixture_adder_new(i, &add, &release);
        CHECK(add(adder, 1) == i + 1, "first call");
        CHECK(add(adder, 2) == i + 3, "second call");
        CHECK(add(adder, 1000) == -1, "a panic returns the fallback");
        CHECK(strstr(last_error(), "panicked: 1000 is out of range") != NULL, "last error: %s",
              last_error());
        CHECK(add(adder, 0) == i + 3, "the panicking call added nothing");
        if (i % 2 == 0) {
            release(adder);
        } else {
            release_elsewhere(release, adder);
        }

        /* A once closure as a thread's start routine: runs once and frees
         * itself on that thread. */
        start_fn start = NULL;
        void *once = fixture_once_new(i, &start, &release);
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, start, once) == 0, "pthread_create");
        void *result = NULL;
        pthread_join(thread, &result);
        CHECK((intptr_t)result == i + 1, "the start routine returned %p", result);

        /* One that never runs is freed instead. */
        void *never = fixture_once_new(i, &start, &release);
        release(never);
    }
    CHECK(fixture_values_live() == live, "every closure dropped");
    CHECK(fixture_values_dropped() - dropped == (uint64_t)n * 3, "%llu dropped, expected %d",
          (unsigned long long)(fixture_values_dropped() - dropped), n * 3);

    /* Freed while a call is inside it: the drop waits for that call. */
    adder_fn add = NULL;
    release_fn release = NULL;
    void *adder = fixture_adder_new(5, &add, &release);
    struct call_job job = {add, adder, 2000, 0};
    pthread_t caller;
    CHECK(pthread_create(&caller, NULL, call_on_thread, &job) == 0, "pthread_create");
    fixture_hold_wait_inside();
    release(adder);
    CHECK(fixture_values_live() == live + 1, "dropped while a call was in it");
    fixture_hold_release();
    pthread_join(caller, NULL);
    CHECK(job.result == 2005, "the held call returned %d", job.result);
    CHECK(fixture_values_live() == live, "dropped by the held call's return");
    printf("closures=%d\n", n * 3 + 1);
}

/* ------------------------------------------------------------------------ */
/* Calls abandoned by longjmp                                                */
/* ------------------------------------------------------------------------ */

static _Thread_local jmp_buf *jump_point;

static int64_t jump_out(int32_t depth) {
    (void)depth;
    longjmp(*jump_point, 1);
}

/* Calls the closure with 1, whose body calls `jump_out`: 1 once the jump
 * came back here, leaving the call. */
static int abandon_call(adder_fn add, void *data) {
    jmp_buf here;
    jump_point = &here;
    if (setjmp(here) == 0) {
        add(data, 1);
        return 0; /* not reached */
    }
    return 1;
}

struct abandon_job {
    adder_fn call;
    void *data;
    int left;
};

static void *abandon_on_thread(void *arg) {
    struct abandon_job *job = arg;
    job->left = abandon_call(job->call, job->data);
    return NULL;
}

/* Fails unless the fixture's init thread binds no context: the modes that
 * need the next thread to get the context the last one gave up (the free
 * list hands back the one pushed last) cannot have another thread push
 * one meanwhile, as the init thread does as it exits after its init
 * called back (unless FIXTURE_INIT=none). */
static void require_no_init_thread_context(void) {
    const char *init = getenv("FIXTURE_INIT");
    CHECK(init != NULL && strcmp(init, "none") == 0,
          "run this mode with FIXTURE_INIT=none (the init thread's context would race with "
          "the contexts the mode hands from thread to thread)");
}

/* Runs start(arg) on a new thread with a stack of its own (malloc'd, so
 * that glibc's cache of thread stacks does not give it to a later thread),
 * and waits for it. */
static void run_on_own_stack(start_fn start, void *arg) {
    size_t size = 256 * 1024;
    void *stack = malloc(size);
    CHECK(stack != NULL, "malloc");
    pthread_attr_t attributes;
    CHECK(pthread_attr_init(&attributes) == 0 &&
              pthread_attr_setstack(&attributes, stack, size) == 0,
          "a thread attribute with a stack");
    pthread_t thread;
    CHECK(pthread_create(&thread, &attributes, start, arg) == 0, "pthread_create");
    pthread_join(thread, NULL);
    pthread_attr_destroy(&attributes);
    free(stack);
}

static void abandon(int n) {
    require_no_init_thread_context();
    int64_t live = fixture_values_live();
    uint64_t dropped = fixture_values_dropped();
    adder_fn call = NULL;
    release_fn release = NULL;
    void *jumper = fixture_jumper_new(jump_out, &call, &release);
    CHECK(jumper && call && release, "made the closure");
    int32_t count = 0;
    for (int i = 0; i < n; i++) {
        CHECK(abandon_call(call, jumper) == 1, "the call was left by longjmp");
        count++;
        /* The next call on the thread takes the abandoned call's turn back. */
        int32_t got = call(jumper, 0);
        CHECK(got == ++count, "call after the jump returned %d, expected %d (%s)", got, count,
              last_error());
        /* And a call from another thread gets its turn after it. */
        got = call_on_new_thread(call, jumper, 0);
        CHECK(got == ++count, "the other thread's call returned %d, expected %d", got, count);
    }
    /* A call abandoned on a thread that then exits, on a stack of its own:
     * the next thread gets that thread's context (the free list hands back
     * the context pushed last) and takes the turn back, though the
     * abandoned call's frame was on no stack it knows. */
    struct abandon_job abandoner = {call, jumper, 0};
    run_on_own_stack(abandon_on_thread, &abandoner);
    CHECK(abandoner.left == 1, "the call was left by longjmp");
    count++;
    alarm(60); /* a call waiting for the abandoned turn for good fails the test */
    int32_t next = call_on_new_thread(call, jumper, 0);
    alarm(0);
    CHECK(next == ++count, "the next thread's call returned %d, expected %d", next, count);
    CHECK(call(jumper, 0) == ++count, "a call after it");
    /* Every abandoned call's reference to the closure was given back. */
    release(jumper);
    CHECK(fixture_values_live() == live, "the closure was dropped");
    CHECK(fixture_values_dropped() - dropped == 1, "dropped once");
    printf("abandoned=%d\n", n);
}

/* ------------------------------------------------------------------------ */
/* Calls abandoned under a per-call context that goes to another thread      */
/* ------------------------------------------------------------------------ */

static adder_fn handed_call;
static void *handed_data;

/* A per-call callback's C callee: a call into the closure, left by
 * longjmp back here. The callback then returns, and its context is
 * released. */
static int64_t abandon_inside(int32_t depth) {
    (void)depth;
    return abandon_call(handed_call, handed_data) == 1 ? 0 : -1;
}

static void *abandon_per_call(void *arg) {
    int64_t *result = arg;
    *result = fixture_nest_per_call(1, abandon_inside);
    return NULL;
}

static pthread_key_t late_key;
static int32_t late_result;
static int64_t late_nest;

/* A key destructor that runs after the runtime's (its key was made
 * later): the thread's exit hook ran, so its calls are served per call,
 * never cached; the context goes back to the free list as the callback
 * returns, while the thread lives. A new thread then gets that context
 * and calls the closure. */
static void late_destructor(void *value) {
    (void)value;
    late_nest = fixture_nest_per_call(1, abandon_inside);
    late_result = call_on_new_thread(handed_call, handed_data, 0);
}

static void *exit_late(void *arg) {
    struct call_job *job = arg;
    /* Binds the thread, so that the runtime's key destructor runs. */
    job->result = job->add(job->data, job->value);
    CHECK(pthread_setspecific(late_key, &late_key) == 0, "pthread_setspecific");
    return NULL;
}

/* The next thread on the context of a thread whose per-call callback left
 * a call inside the closure takes the turn back: the thread gave up the
 * context with that call judged gone. Where the context is cached between
 * a thread's calls (x86-64), it goes to the free list at the thread's
 * exit; the thread runs on a stack of its own, so that the abandoned
 * call's frame is on no stack the next thread knows. */
static void handed_on(void) {
    require_no_init_thread_context();
    int64_t live = fixture_values_live();
    uint64_t dropped = fixture_values_dropped();
    release_fn release = NULL;
    handed_data = fixture_jumper_new(jump_out, &handed_call, &release);
    CHECK(handed_data && handed_call && release, "made the closure");
    int32_t count = 0;
    /* This thread's call binds it: the runtime's pthread key exists from
     * here on, so `late_key` comes after it. */
    CHECK(handed_call(handed_data, 0) == ++count, "a first call");
    CHECK(pthread_key_create(&late_key, late_destructor) == 0, "pthread_key_create");

    int64_t nested = -9;
    run_on_own_stack(abandon_per_call, &nested);
    CHECK(nested == 0, "the per-call callback returned %lld", (long long)nested);
    count++;
    alarm(60); /* a call waiting for the abandoned turn for good fails the test */
    int32_t next = call_on_new_thread(handed_call, handed_data, 0);
    CHECK(next == ++count, "the next thread's call returned %d, expected %d", next, count);

    struct call_job first = {handed_call, handed_data, 0, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, exit_late, &first) == 0, "pthread_create");
    pthread_join(thread, NULL);
    alarm(0);
    CHECK(first.result == ++count, "the late thread's first call returned %d", first.result);
    CHECK(late_nest == 0, "the late per-call callback returned %lld", (long long)late_nest);
    count++;
    CHECK(late_result == ++count,
          "the call of the thread that got the late context returned %d, expected %d",
          late_result, count);
    CHECK(handed_call(handed_data, 0) == ++count, "a call after it");
    CHECK(pthread_key_delete(late_key) == 0, "pthread_key_delete");
    release(handed_data);
    CHECK(fixture_values_live() == live, "the closure was dropped");
    CHECK(fixture_values_dropped() - dropped == 1, "dropped once");
    printf("handed_on=%d\n", count);
}

#ifdef __GLIBC__
/* ------------------------------------------------------------------------ */
/* A call suspended inside a closure on a coroutine stack                   */
/* ------------------------------------------------------------------------ */

static ucontext_t suspender, coroutine;
static adder_fn suspended_add;
static void *suspended_data;
static int32_t suspended_result;

/* The closure body's hook: suspends the coroutine inside the body. */
static int64_t suspend_inside(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&coroutine, &suspender) == 0, "swapcontext");
    return 0;
}

static void coroutine_entry(void) { suspended_result = suspended_add(suspended_data, 1); }

/* A callback's C callee: runs the coroutine until it suspends. */
static int64_t start_coroutine(int32_t depth) {
    (void)depth;
    CHECK(swapcontext(&suspender, &coroutine) == 0, "swapcontext");
    return 0;
}

/* A callback starts a coroutine whose call into an FnMut closure suspends
 * inside the body, then returns: the thread's next call into the closure
 * is its outermost one, but the suspended call still holds the body, so
 * the call is refused (not given the body a second time); once the
 * suspended call resumes and returns, calls get their turn again. */
static void suspended(void) {
    int64_t live = fixture_values_live();
    uint64_t dropped = fixture_values_dropped();
    release_fn release = NULL;
    suspended_data = fixture_jumper_new(suspend_inside, &suspended_add, &release);
    CHECK(suspended_data && suspended_add && release, "made the closure");
    size_t size = 256 * 1024;
    void *stack = malloc(size);
    CHECK(stack != NULL && getcontext(&coroutine) == 0, "a coroutine");
    coroutine.uc_stack.ss_sp = stack;
    coroutine.uc_stack.ss_size = size;
    coroutine.uc_link = &suspender;
    makecontext(&coroutine, coroutine_entry, 0);
    CHECK(fixture_nest(1, start_coroutine) == 0, "the callback that started the coroutine");
    int32_t got = suspended_add(suspended_data, 0);
    CHECK(got == -1, "a call while another is suspended inside the closure returned %d", got);
    CHECK(strstr(last_error(), "called again from inside its own call") != NULL,
          "last error: %s", last_error());
    CHECK(swapcontext(&suspender, &coroutine) == 0, "swapcontext");
    CHECK(suspended_result == 1, "the suspended call returned %d", suspended_result);
    CHECK(suspended_add(suspended_data, 0) == 2, "a call after it");
    release(suspended_data);
    free(stack);
    CHECK(fixture_values_live() == live, "the closure was dropped");
    CHECK(fixture_values_dropped() - dropped == 1, "dropped once");
    printf("suspended=1\n");
}
#endif

/* ------------------------------------------------------------------------ */
/* A concurrent closure                                                      */
/* ------------------------------------------------------------------------ */

struct tally_worker {
    pthread_t thread;
    pthread_barrier_t *ready; /* if set: met before the calls */
    adder_fn call;
    void *tally;
    int calls;       /* calls with 0 */
    int32_t last;    /* then one call with this value (3000 nests a call,
                        2000 waits inside, 4000 lets C free the closure as
                        it returns) */
    int bind_first;
    int failures;
    int32_t last_result;
};

static void *tally_calls(void *arg) {
    struct tally_worker *worker = arg;
    /* Half the threads bind with a first callback before their calls into
     * the closure; the others' first call into it binds them. */
    if (worker->bind_first && fixture_values_live() < 0) worker->failures++;
    if (worker->ready != NULL) pthread_barrier_wait(worker->ready);
    for (int i = 0; i < worker->calls; i++) {
        if (worker->call(worker->tally, 0) <= 0) worker->failures++;
    }
    worker->last_result = worker->call(worker->tally, worker->last);
    if (worker->last_result <= 0) worker->failures++;
    return NULL;
}

struct jump_job {
    adder_fn call;
    void *data;
    int32_t after;
    int left;
    pthread_barrier_t *freed; /* if set: met before and after C frees the closure */
};

static void *jump_then_call(void *arg) {
    struct jump_job *job = arg;
    job->left = abandon_call(job->call, job->data);
    /* The thread's hazard word still announces the abandoned call: this
     * one counts a reference instead. */
    job->after = job->call(job->data, 0);
    if (job->freed != NULL) {
        pthread_barrier_wait(job->freed);
        pthread_barrier_wait(job->freed);
    }
    return NULL;
}

static void concurrent(int count, int calls, int with_fork) {
    int64_t live = fixture_values_live();
    uint64_t dropped = fixture_values_dropped();
    adder_fn call = NULL;
    release_fn release = NULL;
    void *tally = fixture_tally_new(jump_out, &call, &release);
    CHECK(tally && call && release, "made the closure");

    /* Many threads at once, each call and nested call counted once. */
    struct tally_worker *workers = calloc((size_t)count, sizeof *workers);
    CHECK(workers != NULL, "out of memory");
    pthread_barrier_t ready;
    CHECK(pthread_barrier_init(&ready, NULL, (unsigned)count) == 0, "pthread_barrier_init");
    for (int i = 0; i < count; i++) {
        workers[i] = (struct tally_worker){.ready = &ready, .call = call, .tally = tally,
                                           .calls = calls, .last = 3000,
                                           .bind_first = i % 2 == 0};
        CHECK(pthread_create(&workers[i].thread, NULL, tally_calls, &workers[i]) == 0,
              "pthread_create");
    }
    int failures = 0;
    for (int i = 0; i < count; i++) {
        pthread_join(workers[i].thread, NULL);
        failures += workers[i].failures;
    }
    pthread_barrier_destroy(&ready);
    CHECK(failures == 0, "%d calls failed", failures);
    int64_t made = (int64_t)count * (calls + 2);
    CHECK(call(tally, 0) == made + 1, "count %d, expected %lld", call(tally, 0) - 1,
          (long long)made + 1);
    made += 1;

    /* Freed while `count` calls are inside it, on bound threads and on
     * threads whose first call it is: dropped by the last to return. */
    for (int i = 0; i < count; i++) {
        workers[i] = (struct tally_worker){.call = call, .tally = tally, .last = 2000,
                                           .bind_first = i % 2 == 0};
        CHECK(pthread_create(&workers[i].thread, NULL, tally_calls, &workers[i]) == 0,
              "pthread_create");
    }
    fixture_tally_wait_inside((uint32_t)count);
    release(tally);
    CHECK(fixture_values_live() == live + 1, "dropped while %d calls were in it", count);
    fixture_tally_release();
    int64_t results = 0;
    for (int i = 0; i < count; i++) {
        pthread_join(workers[i].thread, NULL);
        failures += workers[i].failures;
        results += workers[i].last_result;
    }
    CHECK(failures == 0, "%d calls failed", failures);
    /* The held calls returned the counts made + 1 to made + count. */
    int64_t expected = (int64_t)count * made + (int64_t)count * (count + 1) / 2;
    CHECK(results == expected, "held calls returned %lld in all, expected %lld",
          (long long)results, (long long)expected);
    CHECK(fixture_values_live() == live, "dropped by the last held call's return");
    CHECK(fixture_values_dropped() - dropped == 1, "dropped once");

    /* Freed as the threads' last calls return: each counts itself just
     * before it returns, and C frees the closure once all have, so the
     * drop meets calls withdrawing their hold (what the sanitizers and
     * helgrind look at). */
    for (int round = 0; round < 20; round++) {
        tally = fixture_tally_new(jump_out, &call, &release);
        for (int i = 0; i < count; i++) {
            workers[i] = (struct tally_worker){.call = call, .tally = tally,
                                               .calls = calls / 20, .last = 4000,
                                               .bind_first = i % 2 == 0};
            CHECK(pthread_create(&workers[i].thread, NULL, tally_calls, &workers[i]) == 0,
                  "pthread_create");
        }
        fixture_tally_wait_inside((uint32_t)count);
        release(tally);
        for (int i = 0; i < count; i++) {
            pthread_join(workers[i].thread, NULL);
            failures += workers[i].failures;
        }
        fixture_tally_release();
        CHECK(failures == 0, "%d calls failed", failures);
        CHECK(fixture_values_live() == live, "round %d: dropped once its calls returned", round);
    }
    free(workers);
    CHECK(fixture_values_dropped() - dropped == 21, "each closure dropped once");
    dropped += 20;

    /* Calls left by longjmp: the abandoned call's thread announces the
     * closure until it exits, so freeing it leaves it to the thread's exit. */
    tally = fixture_tally_new(jump_out, &call, &release);
    for (int i = 0; i < 4; i++) {
        struct jump_job job = {call, tally, 0, 0, NULL};
        pthread_t thread;
        CHECK(pthread_create(&thread, NULL, jump_then_call, &job) == 0, "pthread_create");
        pthread_join(thread, NULL);
        CHECK(job.left == 1, "the call was left by longjmp");
        CHECK(job.after == 2 * i + 2, "the call after the jump returned %d, expected %d",
              job.after, 2 * i + 2);
    }
    /* Freed while the thread it was left on lives: dropped at its exit. */
    pthread_barrier_t freed;
    CHECK(pthread_barrier_init(&freed, NULL, 2) == 0, "pthread_barrier_init");
    struct jump_job last = {call, tally, 0, 0, &freed};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, jump_then_call, &last) == 0, "pthread_create");
    pthread_barrier_wait(&freed);
    release(tally);
    CHECK(fixture_values_live() == live + 1, "dropped while its abandoned call's thread lives");
    pthread_barrier_wait(&freed);
    pthread_join(thread, NULL);
    pthread_barrier_destroy(&freed);
    CHECK(last.left == 1 && last.after == 10, "the last thread's calls: %d, %d", last.left,
          last.after);
    CHECK(fixture_values_live() == live, "dropped by the exit of the thread it was left on");
    CHECK(fixture_values_dropped() - dropped == 2, "each closure dropped once");
    if (!with_fork) {
        printf("concurrent_calls=%lld\n", (long long)made);
        return;
    }
    /* fork while a call is inside the closure: the child has no thread
     * for that call, so it does not wait for it. */
    fixture_tally_rearm();
    tally = fixture_tally_new(jump_out, &call, &release);
    struct tally_worker held = {.call = call, .tally = tally, .last = 2000, .bind_first = 1};
    CHECK(pthread_create(&held.thread, NULL, tally_calls, &held) == 0, "pthread_create");
    fixture_tally_wait_inside(1);
    /* Not freed yet: the child frees it, and its drop runs at once. */
    pid_t child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) {
        release(tally);
        _exit(fixture_values_live() == live ? 0 : 10);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child forked with a call inside the closure did not drop it when freed (%d)",
          status);
    /* Freed, its drop waiting for that call: the child's fork handler ends
     * the call's hold, and drops it. */
    release(tally);
    CHECK(fixture_values_live() == live + 1, "dropped while a call was in it");
    child = fork();
    CHECK(child >= 0, "fork");
    if (child == 0) _exit(fixture_values_live() == live ? 0 : 11);
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "the child forked while a freed closure waited for a call did not drop it (%d)",
          status);
    fixture_tally_release();
    pthread_join(held.thread, NULL);
    CHECK(held.failures == 0 && held.last_result > 0, "the held call returned %d",
          held.last_result);
    CHECK(fixture_values_live() == live, "dropped by the held call's return");
    CHECK(fixture_values_dropped() - dropped == 3, "each closure dropped once");
    printf("concurrent_calls=%lld\n", (long long)made);
}

/* ------------------------------------------------------------------------ */
/* Misuse                                                                    */
/* ------------------------------------------------------------------------ */

/* One misuse of a closure's data, which the runtime turns into an abort
 * with a message (tests/hosts/callbacks.rs checks it): returns only if it did
 * not abort. */
static void misuse(const char *what) {
    adder_fn add = NULL;
    release_fn release = NULL;
    start_fn start = NULL;
    if (strcmp(what, "free-twice") == 0) {
        void *adder = fixture_adder_new(0, &add, &release);
        CHECK(add(adder, 1) == 1, "a call before the frees");
        release(adder);
        release(adder);
    } else if (strcmp(what, "free-twice-in-call") == 0) {
        /* The closure is alive: a call is inside it. */
        void *adder = fixture_adder_new(0, &add, &release);
        struct call_job job = {add, adder, 2000, 0};
        pthread_t caller;
        CHECK(pthread_create(&caller, NULL, call_on_thread, &job) == 0, "pthread_create");
        fixture_hold_wait_inside();
        release(adder);
        release(adder);
        fixture_hold_release();
        pthread_join(caller, NULL);
    } else if (strcmp(what, "free-twice-concurrent") == 0) {
        adder_fn call = NULL;
        void *tally = fixture_tally_new(NULL, &call, &release);
        CHECK(call(tally, 0) == 1, "a call before the frees");
        release(tally);
        release(tally);
    } else if (strcmp(what, "call-after-free") == 0) {
        /* Caught as it starts: the drop retired the closure's turn (the
         * allocation is kept as a tombstone). 1000 would make the body
         * panic, which would say so. */
        void *adder = fixture_adder_new(0, &add, &release);
        release(adder);
        add(adder, 1000);
    } else if (strcmp(what, "once-twice") == 0) {
        void *once = fixture_once_new(1, &start, &release);
        CHECK((intptr_t)start(once) == 2, "the first call");
        start(once);
    } else if (strcmp(what, "once-called-then-freed") == 0) {
        void *once = fixture_once_new(1, &start, &release);
        CHECK((intptr_t)start(once) == 2, "the call");
        release(once);
    } else if (strcmp(what, "once-freed-then-called") == 0) {
        void *once = fixture_once_new(1, &start, &release);
        release(once);
        start(once);
    } else {
        fprintf(stderr, "misuse: unknown case %s\n", what);
        exit(2);
    }
    printf("not_aborted=%s\n", what);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int n = argc > 2 ? atoi(argv[2]) : 0;
    int calls = argc > 3 ? atoi(argv[3]) : 0;
    if (strcmp(mode, "table") == 0) {
        table();
    } else if (strcmp(mode, "threads") == 0 && n > 0 && calls > 0) {
        threads(n, calls);
    } else if (strcmp(mode, "concurrent") == 0 && n > 0 && calls > 0) {
        concurrent(n, calls, !(argc > 4 && strcmp(argv[4], "no-fork") == 0));
    } else if (strcmp(mode, "closures") == 0 && n > 0) {
        closures(n);
    } else if (strcmp(mode, "abandon") == 0 && n > 0) {
        abandon(n);
    } else if (strcmp(mode, "handed-on") == 0) {
        handed_on();
    } else if (strcmp(mode, "misuse") == 0 && argc > 2) {
        misuse(argv[2]);
        return 3;
#ifdef __GLIBC__
    } else if (strcmp(mode, "suspended") == 0) {
        suspended();
#endif
    } else {
        fprintf(stderr,
                "usage: %s table | threads T N | closures N | abandon N | handed-on | suspended | "
                "concurrent T N [no-fork] | misuse CASE\n",
                argv[0]);
        return 2;
    }
    printf("checks=%d\nresult=ok\n", checks);
    return 0;
}
