/* Real C threads calling Rust callbacks: the harness for tests/threads.rs. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"

typedef struct {
    harness_cb cb;
    int64_t calls;
    pthread_barrier_t *start;
    pthread_barrier_t *hold;
    harness_thread_result *result;
} worker_args;

static void *worker(void *raw) {
    worker_args *args = raw;
    if (args->start) pthread_barrier_wait(args->start);
    int32_t first = args->cb(0);
    int64_t changes = 0;
    for (int64_t i = 1; i < args->calls; i++) {
        if (args->cb((int32_t)i) != first) changes++;
    }
    args->result->first = first;
    args->result->changes = changes;
    if (args->hold) pthread_barrier_wait(args->hold);
    return NULL;
}

/* Runs `threads` pthreads that each call `cb` `calls_per_thread` times,
 * optionally starting together and staying alive until all have called.
 * Returns 0 on success, -1 if a thread could not be created. */
int h_run_threads(harness_cb cb, int threads, int64_t calls_per_thread,
                  int start_together, int hold_until_all_called,
                  harness_thread_result *results) {
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    worker_args *args = calloc((size_t)threads, sizeof *args);
    pthread_barrier_t start, hold;
    if (!ids || !args) return -1;
    if (start_together) pthread_barrier_init(&start, NULL, (unsigned)threads);
    if (hold_until_all_called) pthread_barrier_init(&hold, NULL, (unsigned)threads);
    int created = 0, rc = 0;
    for (; created < threads; created++) {
        args[created] = (worker_args){cb, calls_per_thread, start_together ? &start : NULL,
                                      hold_until_all_called ? &hold : NULL, &results[created]};
        if (pthread_create(&ids[created], NULL, worker, &args[created]) != 0) {
            rc = -1;
            break;
        }
    }
    /* A thread that failed to start would leave the barriers waiting forever. */
    if (rc != 0) abort();
    for (int i = 0; i < created; i++) pthread_join(ids[i], NULL);
    if (start_together) pthread_barrier_destroy(&start);
    if (hold_until_all_called) pthread_barrier_destroy(&hold);
    free(ids);
    free(args);
    return rc;
}

/* Creates and joins `threads` threads one after the other. */
int h_sequential_threads(harness_cb cb, int threads, int64_t calls_per_thread) {
    for (int i = 0; i < threads; i++) {
        harness_thread_result result;
        if (h_run_threads(cb, 1, calls_per_thread, 0, 0, &result) != 0) return -1;
    }
    return 0;
}

/* --- calls from a pthread key destructor registered after callgate's --- */

static pthread_key_t late_key;
static harness_cb late_cb;
static atomic_long late_successes;

static void late_destructor(void *value) {
    (void)value;
    /* The callback returns a context id (>= 0) when it ran. */
    if (late_cb(2) >= 0) atomic_fetch_add(&late_successes, 1);
}

static void *late_worker(void *raw) {
    (void)raw;
    late_cb(1); /* binds this thread */
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}

/* `threads` threads, `per_wave` alive at a time, each calling once and then
 * again from a key destructor created after callgate's key. Returns how many
 * destructor calls ran the callback, or -1 on a pthread failure. */
int64_t h_calls_from_late_key_destructor(harness_cb cb, int threads, int per_wave) {
    late_cb = cb;
    atomic_store(&late_successes, 0);
    /* Make sure callgate's key exists first: one call from a short-lived
     * thread binds (and creates the key) without binding the caller. */
    harness_thread_result warm_up;
    if (h_run_threads(cb, 1, 1, 0, 0, &warm_up) != 0) return -1;
    if (pthread_key_create(&late_key, late_destructor) != 0) return -1;
    pthread_t ids[64];
    if (per_wave > 64) per_wave = 64;
    for (int done = 0; done < threads; done += per_wave) {
        int wave = threads - done < per_wave ? threads - done : per_wave;
        for (int i = 0; i < wave; i++)
            if (pthread_create(&ids[i], NULL, late_worker, NULL) != 0) return -1;
        for (int i = 0; i < wave; i++) pthread_join(ids[i], NULL);
    }
    pthread_key_delete(late_key);
    return atomic_load(&late_successes);
}

/* Calls back into Rust from C, for nesting tests: Rust -> C -> Rust. */
int32_t h_call_nested(harness_cb cb, int32_t value) {
    return cb(value);
}
