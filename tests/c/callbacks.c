/* The C side of the user-data and closure tests: C code that takes a
 * callback with a `void *` as C APIs do — the pointer first, in the
 * middle or last — and calls it from its own pthreads. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef int32_t (*cb_data_first)(void *data, int32_t value);
typedef int32_t (*cb_data_middle)(int32_t a, void *data, int32_t b);
typedef int32_t (*cb_data_last)(int32_t value, void *data);
typedef void (*cb_free)(void *data);

int32_t cb_call_first(cb_data_first cb, void *data, int32_t value);
int32_t cb_call_middle(cb_data_middle cb, int32_t a, void *data, int32_t b);
int32_t cb_call_last(cb_data_last cb, int32_t value, void *data);
int64_t cb_threads(cb_data_first cb, void *data, int threads, int32_t calls);
void *cb_start(cb_data_first cb, void *data, int32_t value);
int32_t cb_join(void *started);
int cb_free_on_thread(cb_free release, void *data);

int32_t cb_call_first(cb_data_first cb, void *data, int32_t value) {
    return cb(data, value);
}

int32_t cb_call_middle(cb_data_middle cb, int32_t a, void *data, int32_t b) {
    return cb(a, data, b);
}

int32_t cb_call_last(cb_data_last cb, int32_t value, void *data) {
    return cb(value, data);
}

struct cb_worker {
    pthread_t thread;
    cb_data_first cb;
    void *data;
    int32_t first;
    int32_t calls;
    int64_t sum;
};

static void *cb_worker_main(void *arg) {
    struct cb_worker *worker = arg;
    for (int32_t i = 0; i < worker->calls; i++) {
        worker->sum += worker->cb(worker->data, worker->first + i);
    }
    return NULL;
}

/* `threads` pthreads each call cb(data, i) for i in [0, calls); returns the
 * sum of every result, or INT64_MIN if a thread could not be created. */
int64_t cb_threads(cb_data_first cb, void *data, int threads, int32_t calls) {
    struct cb_worker *workers = calloc((size_t)threads, sizeof *workers);
    if (workers == NULL) return INT64_MIN;
    int started = 0, failed = 0;
    for (; started < threads; started++) {
        workers[started] = (struct cb_worker){.cb = cb, .data = data, .calls = calls};
        if (pthread_create(&workers[started].thread, NULL, cb_worker_main, &workers[started]) != 0) {
            failed = 1;
            break;
        }
    }
    int64_t sum = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(workers[i].thread, NULL);
        sum += workers[i].sum;
    }
    free(workers);
    return failed ? INT64_MIN : sum;
}

/* One call of cb(data, value) on a new thread: cb_start starts it, and
 * cb_join waits for it and returns its result (INT32_MIN if the thread
 * could not be created). */
void *cb_start(cb_data_first cb, void *data, int32_t value) {
    struct cb_worker *worker = calloc(1, sizeof *worker);
    if (worker == NULL) return NULL;
    *worker = (struct cb_worker){.cb = cb, .data = data, .first = value, .calls = 1};
    if (pthread_create(&worker->thread, NULL, cb_worker_main, worker) != 0) {
        free(worker);
        return NULL;
    }
    return worker;
}

int32_t cb_join(void *started) {
    struct cb_worker *worker = started;
    if (worker == NULL) return INT32_MIN;
    pthread_join(worker->thread, NULL);
    int32_t result = (int32_t)worker->sum;
    free(worker);
    return result;
}

struct cb_release {
    cb_free release;
    void *data;
};

static void *cb_release_main(void *arg) {
    struct cb_release *job = arg;
    job->release(job->data);
    return NULL;
}

/* Calls release(data) on a new thread and waits for it; 0 on success. */
int cb_free_on_thread(cb_free release, void *data) {
    struct cb_release job = {release, data};
    pthread_t thread;
    if (pthread_create(&thread, NULL, cb_release_main, &job) != 0) return -1;
    return pthread_join(thread, NULL);
}
