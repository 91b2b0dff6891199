/* The C side of callgate-bench: pthreads calling Rust callbacks through a
 * volatile function pointer, so the compiler can neither inline the call nor
 * hoist the load of the pointer out of the loop. */
#define _GNU_SOURCE /* sched_getcpu, CPU_SET, pthread_{get,set}affinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* --- the calibration chain --- */

int32_t bench_calibration(int32_t x) {
    int32_t chain = 0;
    for (int i = 0; i < BENCH_CALIBRATION_STEPS; i++) {
        chain += 1;
        /* The empty asm makes `chain` opaque to the compiler: it can
         * neither fold the additions nor unroll them into anything but one
         * dependent `add` after another. */
        __asm__ volatile("" : "+r"(chain));
    }
    return x + 1 + (chain - BENCH_CALIBRATION_STEPS);
}

/* --- timed call loops --- */

/* Every timed call runs in one of these loops, one per callback shape: one
 * copy of the code, not inlined and aligned to a cache line, so how the loop
 * falls across instruction-fetch boundaries is the same for every row (at a
 * couple of nanoseconds per call, it shows). */
__attribute__((noinline, aligned(64)))
static int64_t int_calls(bench_int_fn fn, int64_t calls) {
    bench_int_fn volatile call = fn;
    int64_t sum = 0;
    for (int64_t i = 0; i < calls; i++) sum += call((int32_t)i);
    return sum;
}

__attribute__((noinline, aligned(64)))
static int64_t cstr_calls(bench_cstr_fn fn, const char *text, int64_t calls) {
    bench_cstr_fn volatile call = fn;
    int64_t sum = 0;
    for (int64_t i = 0; i < calls; i++) sum += call(text, (int32_t)i);
    return sum;
}

__attribute__((noinline, aligned(64)))
static int64_t slice_calls(bench_slice_fn fn, const uint8_t *data, size_t data_len,
                           int64_t calls) {
    bench_slice_fn volatile call = fn;
    int64_t sum = 0;
    for (int64_t i = 0; i < calls; i++) sum += call(data, data_len);
    return sum;
}

__attribute__((noinline, aligned(64)))
static int64_t data_calls(bench_data_fn fn, void *user_data, int64_t calls) {
    bench_data_fn volatile call = fn;
    int64_t sum = 0;
    for (int64_t i = 0; i < calls; i++) sum += call(user_data, (int32_t)i);
    return sum;
}

typedef struct {
    const bench_loop *spec;
    bench_loop_result *result;
} loop_job;

static int64_t calls(const bench_loop *spec, int64_t n) {
    if (spec->int_fn) return int_calls(spec->int_fn, n);
    if (spec->slice_fn) return slice_calls(spec->slice_fn, spec->data, spec->data_len, n);
    if (spec->data_fn) return data_calls(spec->data_fn, spec->user_data, n);
    return cstr_calls(spec->cstr_fn, spec->text, n);
}

static void *loop_worker(void *raw) {
    const bench_loop *spec = ((loop_job *)raw)->spec;
    bench_loop_result *result = ((loop_job *)raw)->result;
    calls(spec, spec->warmup_calls);
    int64_t begin = now_ns();
    result->checksum = calls(spec, spec->calls);
    result->elapsed_ns = now_ns() - begin;
    return NULL;
}

int bench_call_loop(const bench_loop *spec, bench_loop_result *result) {
    loop_job job = {spec, result};
    pthread_t id;
    if (pthread_create(&id, NULL, loop_worker, &job) != 0) return -1;
    pthread_join(id, NULL);
    return 0;
}

/* --- interleaved call loops --- */

typedef struct {
    bench_block *blocks;
    int count;
    int cycles;
    int *order; /* room for `count` indices */
} interleaved_job;

static int64_t block_calls(const bench_block *block) {
    if (block->int_fn) return int_calls(block->int_fn, block->block_calls);
    if (block->slice_fn) {
        return slice_calls(block->slice_fn, block->data, block->data_len, block->block_calls);
    }
    if (block->data_fn) return data_calls(block->data_fn, block->user_data, block->block_calls);
    return cstr_calls(block->cstr_fn, block->text, block->block_calls);
}

/* Puts `order` (a permutation of 0..count-1) in the next pseudo-random
 * order of `state` (xorshift64, Fisher-Yates). */
static void shuffle(int *order, int count, uint64_t *state) {
    for (int i = count - 1; i > 0; i--) {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        int j = (int)(*state % (uint64_t)(i + 1));
        int swapped = order[i];
        order[i] = order[j];
        order[j] = swapped;
    }
}

/* Each cycle times one block of each callback, in a new order. With one
 * fixed order, a block's time depended on its place in the cycle: on an
 * Intel CPU, of four copies of the same library, each timed right after
 * its plain function, the first came out 0.05-0.1 ns per call cheaper than
 * the other three, whichever copy was first. Now no row always runs after
 * the same one, and a row's median is over many places in the cycle. The
 * orders are the same in every run. */
static void *interleaved_worker(void *raw) {
    interleaved_job *job = raw;
    for (int i = 0; i < job->count; i++) block_calls(&job->blocks[i]);
    for (int i = 0; i < job->count; i++) job->order[i] = i;
    uint64_t state = 0x9e3779b97f4a7c15u;
    for (int cycle = 0; cycle < job->cycles; cycle++) {
        shuffle(job->order, job->count, &state);
        for (int k = 0; k < job->count; k++) {
            bench_block *block = &job->blocks[job->order[k]];
            int64_t begin = now_ns();
            block->checksum += block_calls(block);
            block->cycle_ns[cycle] = now_ns() - begin;
        }
    }
    return NULL;
}

int bench_interleaved(bench_block *blocks, int count, int cycles) {
    interleaved_job job = {.blocks = blocks, .count = count, .cycles = cycles};
    job.order = malloc(sizeof(int) * (size_t)(count > 0 ? count : 1));
    if (!job.order) return -1;
    for (int i = 0; i < count; i++) blocks[i].checksum = 0;
    pthread_t id;
    if (pthread_create(&id, NULL, interleaved_worker, &job) != 0) {
        free(job.order);
        return -1;
    }
    pthread_join(id, NULL);
    free(job.order);
    return 0;
}

/* --- one thread against two --- */

/* A barrier that spins, so it releases the threads within nanoseconds of
 * each other where a sleeping one would add a wake-up to the timed block
 * that follows. After a while it yields between looks, so on a busy
 * machine a waiting thread does not keep the CPU from the one it waits for. */
typedef struct {
    atomic_int arrived;
    atomic_int generation;
    /* Set by the last thread to arrive before it releases the others: when
     * the block that follows the barrier ends. */
    _Atomic int64_t deadline_ns;
} spin_barrier;

/* Waits until `parties` threads have arrived; the last one sets the
 * deadline `block_ns` from now. Returns that deadline. */
static int64_t spin_barrier_wait(spin_barrier *barrier, int parties, int64_t block_ns) {
    int generation = atomic_load_explicit(&barrier->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&barrier->arrived, 1, memory_order_acq_rel) == parties - 1) {
        int64_t deadline = now_ns() + block_ns;
        atomic_store_explicit(&barrier->deadline_ns, deadline, memory_order_relaxed);
        atomic_store_explicit(&barrier->arrived, 0, memory_order_relaxed);
        /* Release: a thread that sees the new generation sees the deadline. */
        atomic_fetch_add_explicit(&barrier->generation, 1, memory_order_release);
        return deadline;
    }
    for (int spins = 0;
         atomic_load_explicit(&barrier->generation, memory_order_acquire) == generation;
         spins++) {
        if (spins >= 10000) {
            sched_yield();
            continue;
        }
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
    return atomic_load_explicit(&barrier->deadline_ns, memory_order_relaxed);
}

/* Calls the callback of `spec` in chunks of `spec->chunk_calls` calls until
 * the clock passes `deadline` (at least one chunk); adds the results to
 * `*checksum` and returns how many chunks it made. */
static int64_t chunks_until(const bench_scaling *spec, int64_t deadline, int64_t *checksum) {
    int64_t chunks = 0;
    do {
        *checksum += spec->fn ? int_calls(spec->fn, spec->chunk_calls)
                              : data_calls(spec->data_fn, spec->user_data, spec->chunk_calls);
        chunks++;
    } while (now_ns() < deadline);
    return chunks;
}

/* Cache-line aligned: the two threads' records sit side by side. */
typedef struct {
    _Alignas(64) bench_scaling *spec;
    spin_barrier *barrier;
    int index;
    int64_t start_ns;
    int64_t end_ns;
    int64_t chunks;
    int64_t checksum;
} scaling_thread;

static void *scaling_worker(void *raw) {
    scaling_thread *self = raw;
    bench_scaling *spec = self->spec;
    scaling_thread *peers = self - self->index;
    int64_t untimed = 0;
    chunks_until(spec, now_ns() + spec->block_ns, &untimed);
    for (int cycle = 0; cycle < spec->cycles; cycle++) {
        int64_t deadline = spin_barrier_wait(self->barrier, 2, spec->block_ns);
        /* The threads take turns at running alone: the two CPUs they are
         * likely on need not be equally fast (on a virtual machine, one may
         * share its core with a neighbour). */
        if (self->index == cycle % 2) {
            int64_t begin = now_ns();
            int64_t chunks = chunks_until(spec, deadline, &self->checksum);
            spec->one_thread_ns += now_ns() - begin;
            spec->one_thread_chunks += chunks;
        }
        /* Both threads call until the same deadline, so neither waits for
         * the other to finish a fixed share: the faster CPU keeps working. */
        deadline = spin_barrier_wait(self->barrier, 2, spec->block_ns);
        self->start_ns = now_ns();
        self->chunks = chunks_until(spec, deadline, &self->checksum);
        self->end_ns = now_ns();
        spin_barrier_wait(self->barrier, 2, 0);
        if (self->index == 0) {
            const scaling_thread *a = &peers[0], *b = &peers[1];
            int64_t first = a->start_ns < b->start_ns ? a->start_ns : b->start_ns;
            int64_t last = a->end_ns > b->end_ns ? a->end_ns : b->end_ns;
            spec->two_threads_ns += last - first;
            spec->two_threads_chunks += a->chunks + b->chunks;
        }
    }
    return NULL;
}

int bench_scaling_pair(bench_scaling *spec) {
    spin_barrier barrier = {0, 0, 0};
    scaling_thread threads[2];
    pthread_t ids[2];
    spec->one_thread_ns = 0;
    spec->one_thread_chunks = 0;
    spec->two_threads_ns = 0;
    spec->two_threads_chunks = 0;
    for (int i = 0; i < 2; i++) {
        threads[i] = (scaling_thread){.spec = spec, .barrier = &barrier, .index = i};
    }
    for (int i = 0; i < 2; i++) {
        /* A missing thread would leave the other at the barrier forever. */
        if (pthread_create(&ids[i], NULL, scaling_worker, &threads[i]) != 0) abort();
    }
    for (int i = 0; i < 2; i++) pthread_join(ids[i], NULL);
    spec->checksum = threads[0].checksum + threads[1].checksum;
    return 0;
}

/* --- new threads --- */

typedef struct {
    bench_int_fn fn;
    int64_t elapsed_ns;
    int32_t value;
    /* The CPU the thread ran on, read after the timed call so that the
     * read touches nothing before it. */
    int cpu;
} single_call;

static void *timed_first_call(void *raw) {
    single_call *self = raw;
    bench_int_fn volatile call = self->fn;
    int64_t begin = now_ns();
    self->value = call(0);
    self->elapsed_ns = now_ns() - begin;
    self->cpu = sched_getcpu();
    return NULL;
}

static void *one_call(void *raw) {
    single_call *self = raw;
    bench_int_fn volatile call = self->fn;
    self->value = call(0);
    return NULL;
}

/* The first two CPUs of `set`, or -1 where it has fewer. */
static int two_cpus(const cpu_set_t *set, int cpus[2]) {
    int found = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && found < 2; cpu++) {
        if (CPU_ISSET(cpu, set)) cpus[found++] = cpu;
    }
    return found == 2 ? 0 : -1;
}

static int pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int bench_first_calls(const bench_int_fn *fns, int count, int threads, int cpus_wanted,
                      int64_t *first_ns, signed char *on_creator_cpu) {
    cpu_set_t saved;
    int cpus[2] = {-1, -1};
    pthread_attr_t attr;
    pthread_attr_t *attr_or_null = NULL;
    if (cpus_wanted != BENCH_ANY_CPU) {
        if (pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0) return -2;
        if (cpus_wanted == BENCH_ONE_CPU) {
            /* The calling thread, which creates the threads (and so writes
             * their TLS blocks), and every thread it creates, all on the
             * CPU it runs on now: each thread starts where the one before
             * it exited. */
            cpus[0] = cpus[1] = sched_getcpu();
            if (cpus[0] < 0) return -2;
        } else if (two_cpus(&saved, cpus) != 0) {
            return -2;
        }
        if (pthread_attr_init(&attr) != 0) return -2;
        attr_or_null = &attr;
    }
    int wrong = 0;
    for (int i = 0; i < threads && wrong >= 0; i++) {
        /* Each round starts with the next function, so none always follows
         * the same one. */
        for (int turn = 0; turn < count; turn++) {
            int k = (i + turn) % count;
            if (attr_or_null != NULL) {
                /* On two CPUs, the creating thread moves to the CPU the
                 * thread before ran on, and the new thread runs on the
                 * other one: it starts on neither the CPU that wrote its
                 * TLS block nor the one that last released a context. */
                int from = cpus[(i * count + turn) % 2];
                int to = from == cpus[0] ? cpus[1] : cpus[0];
                cpu_set_t pinned;
                CPU_ZERO(&pinned);
                CPU_SET(to, &pinned);
                if (pin_self(from) != 0 ||
                    pthread_attr_setaffinity_np(&attr, sizeof pinned, &pinned) != 0) {
                    wrong = -2;
                    break;
                }
            }
            single_call job = {.fn = fns[k], .cpu = -1};
            pthread_t id;
            int creator_cpu = sched_getcpu();
            if (pthread_create(&id, attr_or_null, timed_first_call, &job) != 0) {
                wrong = -1;
                break;
            }
            pthread_join(id, NULL);
            size_t at = (size_t)k * (size_t)threads + (size_t)i;
            first_ns[at] = job.elapsed_ns;
            on_creator_cpu[at] = job.cpu < 0 || creator_cpu < 0 ? -1 : job.cpu == creator_cpu;
            if (job.value != 1) wrong++;
        }
    }
    if (attr_or_null != NULL) {
        pthread_attr_destroy(&attr);
        pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
    }
    return wrong;
}

/* --- a first call's least work, in C --- */

#define C_BIND_FUNCTION bench_c_bind
#include "c_bind.h"

static _Thread_local int32_t c_touched;

int32_t bench_c_tls(int32_t x) {
    c_touched++;
    return x + 1;
}

int bench_churn(const bench_int_fn *fns, int count, int threads, int64_t *total_ns) {
    int wrong = 0;
    for (int k = 0; k < count; k++) total_ns[k] = 0;
    for (int i = 0; i < threads; i++) {
        /* As in `bench_first_calls`: each round starts with the next
         * function. */
        for (int turn = 0; turn < count; turn++) {
            int k = (i + turn) % count;
            single_call job = {.fn = fns[k]};
            pthread_t id;
            int64_t begin = now_ns();
            if (pthread_create(&id, NULL, one_call, &job) != 0) return -1;
            pthread_join(id, NULL);
            total_ns[k] += now_ns() - begin;
            if (job.value != 1) wrong++;
        }
    }
    return wrong;
}
