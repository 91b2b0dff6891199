/* The C host of the demo example: a pool of worker pthreads taking jobs off
 * a queue and calling the Rust plugin's exported functions, as a C program
 * linked against a Rust staticlib or cdylib would. Also the timing loops
 * for the demo's cost table. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers, clock_gettime */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* --- what the plugin exports (its header would declare these) --- */

/* The prime factorisation of `number` (decimal text) as UTF-8 text in a
 * per-thread buffer, valid until this thread's next call; NULL on error. */
const char *demo_factor(const char *number);
/* From callgate::export_error_api!(demo). */
int demo_last_error_message(char *buf, size_t len);

/* --- the job queue --- */

typedef struct {
    const char *input;  /* the text sent to demo_factor; may be NULL or bad */
    int worker;         /* 1-based number of the worker that ran the job */
    int ok;             /* demo_factor returned an answer */
    int64_t elapsed_ns; /* how long the call took */
    char text[256];     /* the answer, or the plugin's last error */
} demo_job;

static demo_job jobs[] = {
    {.input = "360"},
    {.input = "97"},
    {.input = "65536"},
    {.input = "twelve"},   /* not a number: the plugin returns an Err */
    {.input = "4194303"},
    {.input = NULL},       /* NULL where the plugin takes a string */
    {.input = "2026"},
    {.input = "caf\xe9"},  /* Latin-1, not UTF-8 */
    {.input = "999983"},
    {.input = "3628800"},
    {.input = "12345678901"}, /* past the plugin's table: it panics */
    {.input = "1001"},
    {.input = "30030"},
    {.input = "1"},
    {.input = "65535"},
    {.input = "1234567"},
};

#define JOB_COUNT (sizeof jobs / sizeof jobs[0])

static atomic_size_t next_job;
/* Workers stay until the queue is empty for all of them, as in a pool that
 * keeps its threads until shutdown. */
static pthread_barrier_t pool_shutdown;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *worker(void *raw) {
    int id = (int)(intptr_t)raw;
    for (;;) {
        size_t i = atomic_fetch_add(&next_job, 1);
        if (i >= JOB_COUNT) break;
        demo_job *job = &jobs[i];
        int64_t begin = now_ns();
        const char *answer = demo_factor(job->input);
        job->elapsed_ns = now_ns() - begin;
        job->worker = id;
        job->ok = answer != NULL;
        if (answer) {
            snprintf(job->text, sizeof job->text, "%s", answer);
        } else if (demo_last_error_message(job->text, sizeof job->text) < 0) {
            snprintf(job->text, sizeof job->text, "(no error message)");
        }
    }
    pthread_barrier_wait(&pool_shutdown);
    return NULL;
}

/* Runs every job on `workers` pthreads and joins them. Returns the jobs and
 * stores their number in `*count`; returns NULL if `workers` is out of
 * range, and aborts if a thread cannot be created. */
demo_job *demo_host_run_jobs(int workers, size_t *count) {
    pthread_t ids[64];
    if (workers < 1 || workers > 64) return NULL;
    atomic_store(&next_job, 0);
    pthread_barrier_init(&pool_shutdown, NULL, (unsigned)workers);
    for (int i = 0; i < workers; i++) {
        /* A missing worker would leave the others at the barrier forever. */
        if (pthread_create(&ids[i], NULL, worker, (void *)(intptr_t)(i + 1)) != 0) abort();
    }
    for (int i = 0; i < workers; i++) pthread_join(ids[i], NULL);
    pthread_barrier_destroy(&pool_shutdown);
    *count = JOB_COUNT;
    return jobs;
}

/* --- timing --- */

typedef int32_t (*demo_int_fn)(int32_t);

/* A plain C function, for the baseline row. */
__attribute__((noinline)) int32_t demo_host_c_next(int32_t value) {
    return value + 1;
}

typedef struct {
    demo_int_fn fn;
    int64_t calls;
    int64_t elapsed_ns;
} timed_loop;

static void *timed_loop_thread(void *raw) {
    timed_loop *spec = raw;
    /* volatile: the compiler can neither inline the call nor hoist the
     * load of the pointer out of the loop. */
    demo_int_fn volatile call = spec->fn;
    int32_t sum = 0;
    for (int64_t i = 0; i < spec->calls / 10; i++) sum += call((int32_t)i); /* warm up */
    int64_t begin = now_ns();
    for (int64_t i = 0; i < spec->calls; i++) sum += call((int32_t)i);
    spec->elapsed_ns = now_ns() - begin;
    /* Keep the sum alive without printing it. */
    __asm__ volatile("" : : "r"(sum));
    return NULL;
}

/* Nanoseconds per call of `fn` over `calls` calls on a new pthread (after
 * a warm-up), or -1 if the thread could not be created. */
double demo_host_ns_per_call(demo_int_fn fn, int64_t calls) {
    timed_loop spec = {fn, calls, 0};
    pthread_t id;
    if (calls < 1 || pthread_create(&id, NULL, timed_loop_thread, &spec) != 0) return -1;
    pthread_join(id, NULL);
    return (double)spec.elapsed_ns / (double)calls;
}

typedef struct {
    demo_int_fn fn;
    int64_t first_ns;
} first_call;

static void *first_call_thread(void *raw) {
    first_call *spec = raw;
    int64_t begin = now_ns();
    int32_t result = spec->fn(1);
    spec->first_ns = now_ns() - begin;
    __asm__ volatile("" : : "r"(result));
    return NULL;
}

static int compare_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median time of the first call of `fn` on each of `threads` new
 * pthreads, created one after the other; -1 if a thread could not be
 * created. */
double demo_host_first_call_ns(demo_int_fn fn, int threads) {
    if (threads < 1) return -1;
    int64_t *samples = calloc((size_t)threads, sizeof *samples);
    if (!samples) return -1;
    for (int i = 0; i < threads; i++) {
        first_call spec = {fn, 0};
        pthread_t id;
        if (pthread_create(&id, NULL, first_call_thread, &spec) != 0) {
            free(samples);
            return -1;
        }
        pthread_join(id, NULL);
        samples[i] = spec.first_ns;
    }
    qsort(samples, (size_t)threads, sizeof *samples, compare_i64);
    double median = (double)samples[threads / 2];
    free(samples);
    return median;
}
