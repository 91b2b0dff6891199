/* Shared by the Windows host programs in tests/windows/hosts: load the
 * callgate test fixture (tests/fixture built for x86_64-pc-windows-gnu,
 * callgate_fixture.dll) with LoadLibrary, look up its symbols, read its
 * statistics, start threads with CreateThread, and fail loudly.
 *
 * Every host takes the path of the fixture DLL as argv[1], prints
 * `key=value` lines, and exits 0 only when every check passed; a failed
 * check prints `FAIL: file:line: message` on stderr and exits 1. */
#ifndef CALLGATE_WIN_HOST_H
#define CALLGATE_WIN_HOST_H

#include <windows.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

typedef int64_t (*fixture_init_hook_fn)(void);
typedef int64_t (*fixture_reenter_fn)(int32_t depth);

/* The fixture functions the Windows hosts use. */
typedef struct {
    HMODULE module;
    void (*stats)(fixture_stats_t *out);
    void (*finish_init)(void);
    int (*init_state)(char *buf, size_t len);
    size_t (*last_error_length)(void);
    int (*last_error_message)(char *buf, size_t len);
    void (*clear_last_error)(void);
    int (*init_report)(int64_t *sorted, int64_t *hook);
    int32_t (*work_or_fail)(int32_t value);
    int32_t (*work)(int32_t value);
    int64_t (*token)(void);
    int64_t (*token_per_call)(void);
    int64_t (*token_calls)(void);
    int32_t (*plain)(int32_t value);
    int32_t (*fail)(int32_t code);
    int32_t (*panic)(int32_t kind);
    int64_t (*nest)(int32_t depth, fixture_reenter_fn reenter);
    int64_t (*hold_token_alone)(fixture_reenter_fn reenter);
    int64_t (*nest_per_call)(int32_t depth, fixture_reenter_fn reenter);
    int64_t (*hold_token)(int32_t depth, fixture_reenter_fn reenter);
} fixture;

#define FAIL(...) fixture_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...)                \
    do {                                \
        if (!(cond)) FAIL(__VA_ARGS__); \
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
    fflush(stderr);
    /* ExitProcess would run the DLLs' detach code: a failed check stops here. */
    TerminateProcess(GetCurrentProcess(), 1);
    for (;;) {
    }
}

static inline FARPROC fixture_symbol(HMODULE module, const char *name) {
    FARPROC symbol = GetProcAddress(module, name);
    if (!symbol) FAIL("GetProcAddress(%s): error %lu", name, GetLastError());
    return symbol;
}

#define FIXTURE_SYM(f, field) \
    ((f)->field = (__typeof__((f)->field))(void (*)(void))fixture_symbol((f)->module, "fixture_" #field))

/* LoadLibrary()s the fixture at `path` and resolves every symbol. */
static inline void fixture_open(fixture *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->module = LoadLibraryA(path);
    if (!f->module) FAIL("LoadLibrary(%s): error %lu", path, GetLastError());
    FIXTURE_SYM(f, stats);
    FIXTURE_SYM(f, finish_init);
    FIXTURE_SYM(f, init_state);
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
    FIXTURE_SYM(f, fail);
    FIXTURE_SYM(f, panic);
    FIXTURE_SYM(f, nest);
    FIXTURE_SYM(f, hold_token_alone);
    FIXTURE_SYM(f, nest_per_call);
    FIXTURE_SYM(f, hold_token);
}

static inline const char *fixture_path_arg(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s path\\to\\callgate_fixture.dll [args]\n", argv[0]);
        exit(2);
    }
    return argv[1];
}

static inline fixture_stats_t fixture_snapshot(const fixture *f) {
    fixture_stats_t stats;
    f->stats(&stats);
    return stats;
}

static inline double fixture_now(void) {
    static LARGE_INTEGER frequency;
    LARGE_INTEGER now;
    if (frequency.QuadPart == 0) QueryPerformanceFrequency(&frequency);
    QueryPerformanceCounter(&now);
    return (double)now.QuadPart / (double)frequency.QuadPart;
}

/* The calling thread's last error from the fixture ("" when none). */
static inline const char *fixture_last_error(const fixture *f, char *buf, size_t len) {
    if (f->last_error_message(buf, len) < 0) buf[0] = '\0';
    return buf;
}

/* Waits up to `seconds` for the bound context count to reach `expected`:
 * a thread that WaitForSingleObject saw exit has run its FLS callbacks,
 * but the runtime's own init thread may still be exiting. */
static inline fixture_stats_t fixture_wait_bound(const fixture *f, uint64_t expected,
                                                 double seconds) {
    double deadline = fixture_now() + seconds;
    fixture_stats_t stats = fixture_snapshot(f);
    while (stats.contexts_bound != expected && fixture_now() < deadline) {
        Sleep(1);
        stats = fixture_snapshot(f);
    }
    return stats;
}

/* Waits up to `seconds` for the init to leave "pending" (0 ready, 2 failed). */
static inline int fixture_wait_init(const fixture *f, double seconds) {
    double deadline = fixture_now() + seconds;
    int state;
    while ((state = f->init_state(NULL, 0)) == 1 && fixture_now() < deadline) Sleep(1);
    return state;
}

/* CreateThread that fails the host on error. */
static inline HANDLE fixture_spawn(LPTHREAD_START_ROUTINE start, void *arg) {
    HANDLE thread = CreateThread(NULL, 64 * 1024, start, arg, STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
    if (!thread) FAIL("CreateThread: error %lu", GetLastError());
    return thread;
}

static inline void fixture_join(HANDLE thread) {
    if (WaitForSingleObject(thread, INFINITE) != WAIT_OBJECT_0) FAIL("WaitForSingleObject: error %lu", GetLastError());
    CloseHandle(thread);
}

static inline void fixture_print_stats(const char *prefix, const fixture_stats_t *s) {
    printf("%scontexts_created=%" PRIu64 " contexts_bound=%" PRIu64 " binds=%" PRIu64
           " releases=%" PRIu64 " panics_caught=%" PRIu64
           " errors_returned=%" PRIu64 " gate_waits=%" PRIu64 " token_binds=%" PRIu64
           " token_releases=%" PRIu64 "\n",
           prefix, s->contexts_created, s->contexts_bound, s->binds, s->releases,
           s->panics_caught, s->errors_returned, s->gate_waits, s->token_binds,
           s->token_releases);
}

#endif
