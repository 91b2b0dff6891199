/* The C side of the #[c_callback] behaviour tests: plain C that calls Rust
 * callbacks through function pointers, as a C library would. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

typedef int32_t (*m_ptr_cb)(const void *);
typedef int32_t (*m_i32_cb)(int32_t);
typedef int64_t (*m_i64_cb)(int64_t);
typedef int (*m_cmp_cb)(const void *, const void *);

int32_t m_call_ptr(m_ptr_cb cb, const void *arg);
int32_t m_call_text(m_ptr_cb cb, int which);
int32_t m_call_i32(m_i32_cb cb, int32_t value);
void m_sort_ints(int *values, size_t count, m_cmp_cb compare);
int m_run_threads(m_i64_cb cb, int threads, int calls, int64_t *first, int64_t *last);

int32_t m_call_ptr(m_ptr_cb cb, const void *arg) {
    return cb(arg);
}

/* which: 0 = "hello", 1 = NULL, 2 = bytes that are not UTF-8. */
int32_t m_call_text(m_ptr_cb cb, int which) {
    static const char invalid[] = {'o', 'k', (char)0xff, (char)0xfe, 0};
    switch (which) {
    case 0:
        return cb("hello");
    case 1:
        return cb(NULL);
    default:
        return cb(invalid);
    }
}

int32_t m_call_i32(m_i32_cb cb, int32_t value) {
    return cb(value);
}

void m_sort_ints(int *values, size_t count, m_cmp_cb compare) {
    qsort(values, count, sizeof *values, compare);
}

struct m_thread {
    m_i64_cb cb;
    int index;
    int calls;
    int64_t first;
    int64_t last;
    pthread_barrier_t *start;
    pthread_barrier_t *done;
};

static void *m_thread_main(void *arg) {
    struct m_thread *t = arg;
    pthread_barrier_wait(t->start);
    for (int i = 0; i < t->calls; i++) {
        int64_t result = t->cb(t->index);
        if (i == 0) {
            t->first = result;
        }
        t->last = result;
    }
    /* Every thread stays alive (and bound) until all have made their calls. */
    pthread_barrier_wait(t->done);
    return NULL;
}

/* Runs `threads` pthreads at once, each calling cb(index) `calls` times;
 * stores each thread's first and last result. Returns 0, or -1 if a thread
 * could not be created. */
int m_run_threads(m_i64_cb cb, int threads, int calls, int64_t *first, int64_t *last) {
    pthread_barrier_t start, done;
    struct m_thread *state = calloc((size_t)threads, sizeof *state);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    if (state == NULL || ids == NULL) {
        free(state);
        free(ids);
        return -1;
    }
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_barrier_init(&done, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        state[i] = (struct m_thread){cb, i, calls, 0, 0, &start, &done};
        if (pthread_create(&ids[i], NULL, m_thread_main, &state[i]) != 0) {
            abort(); /* the barriers would never open */
        }
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        first[i] = state[i].first;
        last[i] = state[i].last;
    }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    free(state);
    free(ids);
    return 0;
}
