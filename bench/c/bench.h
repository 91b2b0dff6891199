/* The C side of callgate-bench: real pthreads calling Rust through a
 * volatile function pointer, timed with clock_gettime(CLOCK_MONOTONIC). */
#ifndef CALLGATE_BENCH_H
#define CALLGATE_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* A benchmark callback: returns x + 1. */
typedef int32_t (*bench_int_fn)(int32_t x);
/* A benchmark callback with a string: returns x + strlen(text) + 1. */
typedef int32_t (*bench_cstr_fn)(const char *text, int32_t x);
/* A benchmark callback with a slice: returns the sum of the bytes. */
typedef uint32_t (*bench_slice_fn)(const uint8_t *data, size_t data_len);
/* A benchmark callback with C's callback data, the `void *` a C API passes
 * back to its callback: returns x + 1. */
typedef int32_t (*bench_data_fn)(void *user_data, int32_t x);

/* The calibration callback: a fixed chain of BENCH_CALIBRATION_STEPS
 * dependent additions, then returns x + 1. It does the same work on every
 * call, so where its time per call moves during a run, the machine's speed
 * moved (another thread on the same core, a lower clock, the hypervisor),
 * not the code under test. */
#define BENCH_CALIBRATION_STEPS 100
int32_t bench_calibration(int32_t x);

/* One timed call loop. Exactly one of `int_fn`, `cstr_fn`, `slice_fn` and
 * `data_fn` is set. */
typedef struct {
    bench_int_fn int_fn;
    bench_cstr_fn cstr_fn;
    bench_slice_fn slice_fn;
    bench_data_fn data_fn;
    const char *text;      /* the string passed to `cstr_fn` */
    const uint8_t *data;   /* the bytes passed to `slice_fn` */
    size_t data_len;
    void *user_data;       /* the pointer passed to `data_fn` */
    int64_t warmup_calls;  /* untimed calls before the timed ones */
    int64_t calls;         /* timed calls */
} bench_loop;

/* What a call loop measured. */
typedef struct {
    int64_t elapsed_ns;  /* the time of the timed calls */
    int64_t checksum;    /* the sum of the timed calls' results */
} bench_loop_result;

/* On one new pthread, makes the warm-up calls, then the timed ones. Returns
 * 0, or -1 if the thread could not be created. */
int bench_call_loop(const bench_loop *spec, bench_loop_result *result);

/* One callback of an interleaved measurement. Exactly one of `int_fn`,
 * `cstr_fn`, `slice_fn` and `data_fn` is set. */
typedef struct {
    bench_int_fn int_fn;
    bench_cstr_fn cstr_fn;
    bench_slice_fn slice_fn;
    bench_data_fn data_fn;
    const char *text;      /* the string passed to `cstr_fn` */
    const uint8_t *data;   /* the bytes passed to `slice_fn` */
    size_t data_len;
    void *user_data;       /* the pointer passed to `data_fn` */
    int64_t block_calls;   /* calls per block */
    int64_t *cycle_ns;     /* out: the time of each timed block, one entry
                              per cycle */
    int64_t checksum;      /* out: the sum of all timed calls' results */
} bench_block;

/* On one new pthread: an untimed block of calls of each callback, then
 * `cycles` times a timed block of each callback in turn, so a change in the
 * machine's speed hits all of them alike; each cycle takes the callbacks in
 * another order (the same orders in every run). Returns 0, or -1 if the
 * thread could not be created or memory ran out. */
int bench_interleaved(bench_block *blocks, int count, int cycles);

/* One callback of a scaling measurement: blocks of calls on one thread
 * alone, alternating with blocks on two threads at once. A block lasts a
 * fixed time, not a fixed number of calls: both threads of a two-thread
 * block call until the same deadline, so a thread on the faster CPU does
 * not sit idle while the other finishes its share. */
typedef struct {
    bench_int_fn fn;            /* the callback, or NULL and: */
    bench_data_fn data_fn;      /* a data-first callback, called with */
    void *user_data;            /* this */
    int64_t chunk_calls;        /* calls between two looks at the clock */
    int64_t block_ns;           /* how long a block lasts */
    int cycles;                 /* one-thread blocks, and as many two-thread ones */
    int64_t one_thread_ns;      /* out: the time of the one-thread blocks */
    int64_t one_thread_chunks;  /* out: the chunks of calls they made */
    int64_t two_threads_ns;     /* out: the two-thread blocks' time, each from
                                   the first start to the last end */
    int64_t two_threads_chunks; /* out: the chunks both threads made in them */
    int64_t checksum;           /* out: the sum of all timed calls' results */
} bench_scaling;

/* Starts two pthreads; after an untimed block each, they alternate `cycles`
 * times between a block on one thread alone (each in turn) and a block on
 * both at once, meeting at spinning barriers, so the two figures see the
 * same machine. Returns 0 (aborts if a thread cannot be created). */
int bench_scaling_pair(bench_scaling *spec);

/* Where `bench_first_calls` runs the threads it creates. */
enum {
    /* Where the scheduler puts them. */
    BENCH_ANY_CPU = 0,
    /* The calling thread and every thread it creates on the CPU the caller
     * is on at the start: each thread starts where the one before it
     * exited and where it was created. */
    BENCH_ONE_CPU = 1,
    /* On the first two CPUs of the caller's affinity, alternately: the
     * calling thread moves to the CPU the thread before ran on, and creates
     * the next on the other one, which so starts on neither the CPU that
     * created it nor the one the thread before it exited on. */
    BENCH_OTHER_CPU = 2,
};

/* For each of `threads` rounds, creates and joins one pthread per function
 * of `fns`, one after another (round i starts with `fns[i % count]`); each
 * times its first call of `fns[k](0)` and
 * stores the nanoseconds in `first_ns[k * threads + i]`, and in
 * `on_creator_cpu[k * threads + i]` 1 if the thread ran on the CPU its
 * creator was on just before creating it, 0 if it ran on another, -1 if
 * either CPU is unknown. `cpus_wanted` is one of the
 * `BENCH_*_CPU` values; where it pins threads, the caller's affinity is
 * restored at the end.
 * Returns how many of those calls did not return 1, -1 on a pthread
 * failure, or -2 if the placement cannot be had (the affinity cannot be
 * set, or `BENCH_OTHER_CPU` and the caller may run on one CPU only). */
int bench_first_calls(const bench_int_fn *fns, int count, int threads, int cpus_wanted,
                      int64_t *first_ns, signed char *on_creator_cpu);

/* `x + 1`, after doing in C what a thread's first callback does at the
 * least: read a thread-local slot, pop a context from a lock-free list
 * (allocating one if it is empty), register it with a pthread key whose
 * destructor pushes it back, and store it in the slot. The reference for
 * `first_call_ns`. */
int32_t bench_c_bind(int32_t x);

/* `x + 1`, after adding one to a thread-local variable of this program:
 * the least any first call that keeps state per thread does, since on a
 * new thread the variable's line is one the new thread has not touched.
 * The floor under `first_call.c_bind_ns`. */
int32_t bench_c_tls(int32_t x);

/* For each of `threads` rounds, creates and joins one pthread per function
 * of `fns`, one after another (round i starts with `fns[i % count]`), each
 * calling `fns[k](0)` once; stores the total nanoseconds of creating and
 * joining the threads of `fns[k]` in `total_ns[k]`. Returns how many calls
 * did not return 1, or -1 on a pthread failure. */
int bench_churn(const bench_int_fn *fns, int count, int threads, int64_t *total_ns);

#endif
