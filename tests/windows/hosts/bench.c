/* The fast path under wine, against a raw call through a function pointer:
 * indicative only (wine is not Windows, and the machine is shared).
 *
 *   bench FIXTURE [CALLS] */
#include "win_host.h"

__attribute__((noinline)) static int32_t raw_plain(int32_t value) {
    __asm__ volatile("");
    return value + 1;
}

static double per_call_ns(int32_t (*volatile fn)(int32_t), long calls) {
    int32_t sum = 0;
    double started = fixture_now();
    for (long i = 0; i < calls; i++) sum += fn((int32_t)i);
    double elapsed = fixture_now() - started;
    if (sum == 42) puts("");
    return elapsed * 1e9 / (double)calls;
}

int main(int argc, char **argv) {
    fixture lib;
    const char *path = fixture_path_arg(argc, argv);
    long calls = argc > 2 ? atol(argv[2]) : 20000000L;
    fixture_open(&lib, path);
    CHECK(fixture_wait_init(&lib, 30) == 0, "the init did not succeed");
    CHECK(lib.plain(1) == 2, "plain failed");
    double best_raw = 1e9, best_gated = 1e9;
    for (int round = 0; round < 5; round++) {
        double raw = per_call_ns(raw_plain, calls);
        double gated = per_call_ns(lib.plain, calls);
        if (raw < best_raw) best_raw = raw;
        if (gated < best_gated) best_gated = gated;
    }
    printf("calls=%ld raw_ns=%.2f callback_ns=%.2f overhead_ns=%.2f\n", calls, best_raw,
           best_gated, best_gated - best_raw);
    return 0;
}
