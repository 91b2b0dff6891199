/* The C side of callgate's thread tests: real pthreads calling Rust. */
#ifndef CALLGATE_HARNESS_H
#define CALLGATE_HARNESS_H

#include <stdint.h>

/* A Rust callback under test: takes a value, returns an observation. */
typedef int32_t (*harness_cb)(int32_t);

/* What each thread of h_run_threads saw. */
typedef struct {
    int32_t first;      /* the callback's result on the thread's first call */
    int64_t changes;    /* later calls whose result differed from `first` */
} harness_thread_result;

int h_run_threads(harness_cb cb, int threads, int64_t calls_per_thread,
                  int start_together, int hold_until_all_called,
                  harness_thread_result *results);
int h_sequential_threads(harness_cb cb, int threads, int64_t calls_per_thread);
int64_t h_calls_from_late_key_destructor(harness_cb cb, int threads, int per_wave);
int32_t h_call_nested(harness_cb cb, int32_t value);

#endif
