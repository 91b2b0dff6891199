/* The callbacks program's concurrent mode: one concurrent (Fn) closure
 * called by many threads at once, freed while calls are inside it, left
 * by longjmp, and forked with a call inside it. Included once, by
 * callbacks.c after callbacks_abandoned.h, whose jump_out and
 * abandon_call it uses. */
#ifndef CALLGATE_LINKED_CALLBACKS_CONCURRENT_H
#define CALLGATE_LINKED_CALLBACKS_CONCURRENT_H

#include <sys/wait.h>

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

#endif
