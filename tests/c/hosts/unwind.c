/* Unwinding out of a callback's descriptor call in dynamic TLS: the
 * trampolines' fast paths there call glibc's TLS resolver from instructions
 * of their own, out of line, that move the stack pointer (see callgate's
 * tls module), and a profiler or debugger that stops inside must still walk
 * out to the caller.
 *
 *   unwind FIXTURE
 *
 * The fixture must be in dynamic TLS (run with
 * GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0 and
 * CALLGATE_EXPECT_DYNAMIC_TLS=1). The main thread calls `plain` in a loop
 * under a timer's SIGPROF storm; the SIGPROF handler records a backtrace
 * (glibc's, through the unwind tables) of wherever it stopped. Afterwards,
 * the samples taken inside the dynamic linker (the resolver) must all end
 * in the frames a backtrace taken in the loop itself ends in: the loop's
 * caller and everything below it. Prints samples=, in_resolver=,
 * broken= (samples in the resolver whose walk did not reach them) and
 * result=ok. */
#include "fixture_host.h"

#include <execinfo.h>
#include <link.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc before 2.37 names the thread of a SIGEV_THREAD_ID event only by
 * its union member; musl names it as later glibc does. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* Samples are taken until this many of them stopped in the resolver, or
 * this many in all (one every 200 microseconds: a CLOCK_MONOTONIC timer,
 * not ITIMER_PROF, which the kernel fires at most once a tick). */
#define RESOLVER_SAMPLES 60
#define MAX_SAMPLES 6000
#define DEPTH 32

static fixture lib;
static void *samples[MAX_SAMPLES][DEPTH];
static int depths[MAX_SAMPLES];
static volatile sig_atomic_t taken, in_resolver;
/* The dynamic linker's code, where the TLS resolver is. */
static uintptr_t linker_start, linker_end;

static int in_linker(void *address) {
    return (uintptr_t)address >= linker_start && (uintptr_t)address < linker_end;
}

static void on_prof(int sig) {
    (void)sig;
    int i = taken;
    if (i >= MAX_SAMPLES) return;
    depths[i] = backtrace(samples[i], DEPTH);
    for (int f = 0; f < depths[i]; f++) {
        if (in_linker(samples[i][f])) {
            in_resolver++;
            break;
        }
    }
    taken = i + 1;
}

static int find_linker(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "ld-linux")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_X)) continue;
        uintptr_t start = info->dlpi_addr + segment->p_vaddr;
        if (!linker_start || start < linker_start) linker_start = start;
        if (start + segment->p_memsz > linker_end) linker_end = start + segment->p_memsz;
    }
    return 1;
}

/* The frames below the loop, from a backtrace taken in it. */
static void *outer[DEPTH];
static int outer_depth;

__attribute__((noinline)) static long calls(long n) {
    outer_depth = backtrace(outer, DEPTH);
    long sum = 0;
    for (long i = 0; i < n && taken < MAX_SAMPLES && in_resolver < RESOLVER_SAMPLES; i++)
        sum += lib.plain((int32_t)(i & 0xffff));
    return sum;
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    fixture_open(&lib, path, RTLD_NOW);
    CHECK(fixture_wait_init(&lib, 30) == 0, "init did not become ready");
    void *warm[4];
    backtrace(warm, 4); /* loads the unwinder before any handler runs */
    CHECK(lib.plain(1) == 2, "plain(1)");
    dl_iterate_phdr(find_linker, NULL);
    CHECK(linker_end > linker_start, "the dynamic linker's code was not found");

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_prof;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    CHECK(sigaction(SIGPROF, &action, NULL) == 0, "sigaction");
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = SIGPROF;
    event.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    timer_t timer;
    CHECK(timer_create(CLOCK_MONOTONIC, &event, &timer) == 0, "timer_create");
    struct itimerspec every = {{0, 200 * 1000}, {0, 200 * 1000}};
    CHECK(timer_settime(timer, 0, &every, NULL) == 0, "timer_settime");
    calls(4000L * 1000 * 1000);
    timer_delete(timer);

    /* The frames below `calls`: all of `outer` but its first, `calls`
     * itself (whose return addresses differ between call sites). */
    int below = outer_depth - 1, resolver_samples = 0, broken = 0;
    for (int s = 0; s < taken; s++) {
        int resolver = 0;
        for (int f = 0; f < depths[s]; f++) resolver |= in_linker(samples[s][f]);
        if (!resolver) continue;
        resolver_samples++;
        int ok = depths[s] >= below + 1 &&
                 memcmp(samples[s] + depths[s] - below, outer + 1, below * sizeof(void *)) == 0;
        if (!ok) broken++;
    }
    printf("samples=%d\nin_resolver=%d\nbroken=%d\nresult=ok\n", (int)taken,
           resolver_samples, broken);
    return 0;
}
