/* The callbacks program's modes whose calls into a closure do not return:
 * abandon and handed-on (calls left by longjmp, the second inside a
 * per-call callback whose context then goes to another thread) and
 * suspended (a call suspended on a coroutine stack; glibc only). Included
 * once, by callbacks.c after its helpers: uses adder_fn, release_fn,
 * start_fn, struct call_job and call_on_new_thread. */
#ifndef CALLGATE_LINKED_CALLBACKS_ABANDONED_H
#define CALLGATE_LINKED_CALLBACKS_ABANDONED_H

#include <setjmp.h>
#ifdef __GLIBC__
#include <ucontext.h>
#endif

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

#endif
