/* Shared by the host programs in tests/c/hosts: load the callgate test
 * fixture (tests/fixture, libcallgate_fixture.so) with dlopen, look up its
 * symbols, read its statistics and the process's RSS, and fail loudly.
 *
 * Every host takes the path of the fixture as argv[1]. Hosts print
 * `key=value` lines the Rust tests read, and exit 0 only when every check
 * passed; a failed check prints `FAIL: file:line: message` on stderr and
 * exits 1. Everything here is `static inline` so a host that does not use a
 * helper does not warn about it. */
#ifndef CALLGATE_FIXTURE_HOST_H
#define CALLGATE_FIXTURE_HOST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* g++ defines it already */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* `struct FixtureStats` in tests/fixture/src/lib.rs. */
typedef struct {
    uint64_t contexts_created;
    uint64_t contexts_bound;
    uint64_t contexts_free;
    uint64_t binds;
    uint64_t releases;
    uint64_t panics_caught;
    uint64_t errors_returned;
    uint64_t gate_waits;
    uint64_t tokens_created;
    uint64_t token_binds;
    uint64_t token_releases;
} fixture_stats_t;

typedef int64_t (*fixture_reenter_fn)(int32_t depth);
typedef int64_t (*fixture_init_hook_fn)(void);
typedef struct { int64_t a, b; } fixture_pair;

/* The fixture's exported functions. */
typedef struct {
    void *handle;
    /* control (not callbacks) */
    void (*stats)(fixture_stats_t *out);
    void (*finish_init)(void);
    void (*set_init_hook)(fixture_init_hook_fn hook);
    int (*init_state)(char *buf, size_t len);
    void (*set_faults)(uint64_t faults);
    uint64_t (*faulty_releases)(void);
    /* the last-error API */
    size_t (*last_error_length)(void);
    int (*last_error_message)(char *buf, size_t len);
    void (*clear_last_error)(void);
    /* callbacks */
    int (*init_report)(int64_t *sorted, int64_t *hook);
    int32_t (*work_or_fail)(int32_t value);
    int32_t (*work)(int32_t value);
    int64_t (*token)(void);
    int64_t (*token_per_call)(void);
    int64_t (*token_calls)(void);
    int32_t (*plain)(int32_t value);
    int32_t (*plain_per_call)(int32_t value);
    int32_t (*fail)(int32_t code);
    int64_t (*nest)(int32_t depth, fixture_reenter_fn reenter);
    int64_t (*nest_per_call)(int32_t depth, fixture_reenter_fn reenter);
    int64_t (*hold_token)(int32_t depth, fixture_reenter_fn reenter);
    int64_t (*hold_token_alone)(fixture_reenter_fn reenter);
    int64_t (*hold_token_unwinding)(fixture_reenter_fn reenter);
    int32_t (*read_ref)(const int32_t *value);
    int32_t (*write_mut)(int32_t *out, int32_t value);
    int32_t (*read_opt)(const int32_t *value);
    int32_t (*write_opt)(int32_t *out, int32_t value);
    int64_t (*pair_sum)(const fixture_pair *pair);
    int64_t (*cstr_len)(const char *text);
    int64_t (*opt_cstr_len)(const char *text);
    int64_t (*str_chars)(const char *text);
    int64_t (*opt_str_chars)(const char *text);
    int32_t (*panic)(int32_t kind);
    int32_t (*panic_aborts)(void);
    void (*panic_unit)(int32_t really);
    const char *(*panic_pointer)(int32_t really);
    int32_t (*moody_error)(int32_t kind);
    int32_t (*use_faulty)(void);
    int32_t (*use_faulty_per_call)(void);
    int32_t (*abort_on_panic)(int32_t really);
    int32_t (*abort_on_error)(const int32_t *value);
} fixture;

#define FAIL(...) fixture_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...)                   \
    do {                                   \
        if (!(cond)) FAIL(__VA_ARGS__);    \
    } while (0)

__attribute__((noreturn, format(printf, 3, 4))) static inline void
fixture_fail_at(const char *file, int line, const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "FAIL: %s:%d: ", file, line);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stdout);
    /* _exit: a failed check must not run atexit handlers that call back. */
    _exit(1);
}

static inline void *fixture_symbol(void *handle, const char *name) {
    void *symbol = dlsym(handle, name);
    if (!symbol) FAIL("dlsym(%s): %s", name, dlerror());
    return symbol;
}

#define FIXTURE_SYM(f, field) \
    ((f)->field = (__typeof__((f)->field))fixture_symbol((f)->handle, "fixture_" #field))

#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
static void *fixture_tls_block(void *handle) {
    void *block = NULL;
    if (dlinfo(handle, RTLD_DI_TLS_DATA, &block) != 0) block = handle;
    return block;
}

/* Where the test run asks for it (`CALLGATE_EXPECT_DYNAMIC_TLS`, with
 * glibc's optional static TLS reserve set to 0): checks that the fixture's
 * TLS block is in dynamic TLS. A thread created after dlopen() has a block
 * of a library in static TLS from its start, and one in dynamic TLS only
 * once it accesses it: there dlinfo() finds none. (On the thread that
 * called dlopen() it may find none either way, until that thread's
 * module table catches up.) */
static inline void fixture_check_dynamic_tls(void *handle) {
    pthread_t thread;
    void *block = NULL;
    if (pthread_create(&thread, NULL, fixture_tls_block, handle) != 0 ||
        pthread_join(thread, &block) != 0)
        FAIL("could not start the thread that checks the fixture's TLS");
    if (block != NULL)
        FAIL("the fixture's TLS block is in static TLS (%p), not in dynamic TLS", block);
}
#endif

/* dlopen()s the fixture at `path` with `flags` and resolves every symbol;
 * exits with a message on failure. */
static inline void fixture_open(fixture *f, const char *path, int flags) {
    memset(f, 0, sizeof *f);
    f->handle = dlopen(path, flags);
    if (!f->handle) FAIL("dlopen(%s): %s", path, dlerror());
#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__aarch64__))
    if (getenv("CALLGATE_EXPECT_DYNAMIC_TLS")) fixture_check_dynamic_tls(f->handle);
#endif
    FIXTURE_SYM(f, stats);
    FIXTURE_SYM(f, finish_init);
    FIXTURE_SYM(f, set_init_hook);
    FIXTURE_SYM(f, init_state);
    FIXTURE_SYM(f, set_faults);
    FIXTURE_SYM(f, faulty_releases);
    FIXTURE_SYM(f, last_error_length);
    FIXTURE_SYM(f, last_error_message);
    FIXTURE_SYM(f, clear_last_error);
    FIXTURE_SYM(f, init_report);
    FIXTURE_SYM(f, work_or_fail);
    FIXTURE_SYM(f, work);
    FIXTURE_SYM(f, token);
    FIXTURE_SYM(f, token_per_call);
    FIXTURE_SYM(f, token_calls);
    FIXTURE_SYM(f, plain);
    FIXTURE_SYM(f, plain_per_call);
    FIXTURE_SYM(f, fail);
    FIXTURE_SYM(f, nest);
    FIXTURE_SYM(f, nest_per_call);
    FIXTURE_SYM(f, hold_token);
    FIXTURE_SYM(f, hold_token_alone);
    FIXTURE_SYM(f, hold_token_unwinding);
    FIXTURE_SYM(f, read_ref);
    FIXTURE_SYM(f, write_mut);
    FIXTURE_SYM(f, read_opt);
    FIXTURE_SYM(f, write_opt);
    FIXTURE_SYM(f, pair_sum);
    FIXTURE_SYM(f, cstr_len);
    FIXTURE_SYM(f, opt_cstr_len);
    FIXTURE_SYM(f, str_chars);
    FIXTURE_SYM(f, opt_str_chars);
    FIXTURE_SYM(f, panic);
    FIXTURE_SYM(f, panic_aborts);
    FIXTURE_SYM(f, panic_unit);
    FIXTURE_SYM(f, panic_pointer);
    FIXTURE_SYM(f, moody_error);
    FIXTURE_SYM(f, use_faulty);
    FIXTURE_SYM(f, use_faulty_per_call);
    FIXTURE_SYM(f, abort_on_panic);
    FIXTURE_SYM(f, abort_on_error);
}

/* The fixture path from argv, or a usage message. */
static inline const char *fixture_path_arg(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s path/to/libcallgate_fixture.so [args]\n", argv[0]);
        exit(2);
    }
    return argv[1];
}

static inline fixture_stats_t fixture_snapshot(const fixture *f) {
    fixture_stats_t stats;
    f->stats(&stats);
    return stats;
}

static inline void fixture_print_stats(const char *prefix, const fixture_stats_t *s) {
    printf("%scontexts_created=%" PRIu64 "\n", prefix, s->contexts_created);
    printf("%scontexts_bound=%" PRIu64 "\n", prefix, s->contexts_bound);
    printf("%scontexts_free=%" PRIu64 "\n", prefix, s->contexts_free);
    printf("%sbinds=%" PRIu64 "\n", prefix, s->binds);
    printf("%sreleases=%" PRIu64 "\n", prefix, s->releases);
    printf("%spanics_caught=%" PRIu64 "\n", prefix, s->panics_caught);
    printf("%serrors_returned=%" PRIu64 "\n", prefix, s->errors_returned);
    printf("%sgate_waits=%" PRIu64 "\n", prefix, s->gate_waits);
    printf("%stokens_created=%" PRIu64 "\n", prefix, s->tokens_created);
    printf("%stoken_binds=%" PRIu64 "\n", prefix, s->token_binds);
    printf("%stoken_releases=%" PRIu64 "\n", prefix, s->token_releases);
}

/* The calling thread's last error from the fixture, in a static-size
 * buffer ("" when there is none). */
static inline const char *fixture_last_error(const fixture *f, char *buf, size_t len) {
    if (f->last_error_message(buf, len) < 0) buf[0] = '\0';
    return buf;
}

static inline double fixture_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void fixture_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Resident set size of this process in KiB, from /proc/self/statm. */
static inline long fixture_rss_kib(void) {
    FILE *statm = fopen("/proc/self/statm", "r");
    if (!statm) FAIL("open /proc/self/statm: %s", strerror(errno));
    long size = 0, resident = 0;
    int read = fscanf(statm, "%ld %ld", &size, &resident);
    fclose(statm);
    if (read != 2) FAIL("parse /proc/self/statm");
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Waits up to `seconds` for the fixture's bound context count to reach
 * `expected` (threads that already returned from pthread_join have released
 * theirs, but a detached or runtime-owned thread may still be exiting). */
static inline fixture_stats_t fixture_wait_bound(const fixture *f, uint64_t expected,
                                                 double seconds) {
    double deadline = fixture_now() + seconds;
    fixture_stats_t stats = fixture_snapshot(f);
    while (stats.contexts_bound != expected && fixture_now() < deadline) {
        fixture_sleep_ms(1);
        stats = fixture_snapshot(f);
    }
    return stats;
}

/* Waits up to `seconds` for the fixture's init to leave "pending"; returns
 * the state (0 ready, 1 pending, 2 failed). */
static inline int fixture_wait_init(const fixture *f, double seconds) {
    double deadline = fixture_now() + seconds;
    int state;
    while ((state = f->init_state(NULL, 0)) == 1 && fixture_now() < deadline) fixture_sleep_ms(1);
    return state;
}

/* pthread_create that fails the host on error, with an optional stack size. */
static inline pthread_t fixture_spawn(void *(*start)(void *), void *arg, size_t stack) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (stack) {
        int rc = pthread_attr_setstacksize(&attr, stack);
        if (rc != 0) FAIL("pthread_attr_setstacksize(%zu): %s", stack, strerror(rc));
    }
    pthread_t id;
    int rc = pthread_create(&id, &attr, start, arg);
    pthread_attr_destroy(&attr);
    if (rc != 0) FAIL("pthread_create: %s", strerror(rc));
    return id;
}

static inline void fixture_join(pthread_t id) {
    int rc = pthread_join(id, NULL);
    if (rc != 0) FAIL("pthread_join: %s", strerror(rc));
}

/* True when `address` lies in the calling thread's static TLS, which glibc
 * places just below the thread pointer (x86-64's TLS variant II), or just
 * above it (aarch64's variant I); dynamic TLS blocks are allocated
 * elsewhere. */
static inline int fixture_in_static_tls(const void *address) {
    uintptr_t at = (uintptr_t)address;
#if defined(__aarch64__)
    uintptr_t tp = (uintptr_t)__builtin_thread_pointer();
    return at >= tp && at - tp < 64 * 1024;
#else
    uintptr_t tp = (uintptr_t)pthread_self();
    return at < tp && tp - at < 64 * 1024;
#endif
}

#endif
