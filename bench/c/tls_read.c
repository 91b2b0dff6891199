/* The floors of a callback in dynamic TLS, in a library of its own that
 * the benchmark loads after glibc's static TLS reserve filled up, built
 * with `-mtls-dialect=gnu2` (as callgate reads its slot), so that every
 * access to a thread-local here calls glibc's dynamic resolver through the
 * variable's TLS descriptor, and a new thread's first access allocates
 * the thread's block of this library:
 *
 * - `bench_c_tls_read` reads a thread-local pointer, never set, and
 *   returns `x + 1`: the floor of a call;
 * - `bench_c_bind_dynamic_tls` is `bench_c_bind` (c_bind.h) with its slot
 *   here: the floor of a thread's first call.
 *
 * The bytes beside the pointer make the block (128 bytes with the bind's
 * slot) larger than the benchmark's cdylib's, so that it cannot fit in
 * what is left of the static TLS reserve where a copy of that library did
 * not (the benchmark checks where it went), and keep it as small as that
 * block, so that glibc's allocation of a new thread's block is the size of
 * the one a callback's first call makes glibc allocate there. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

struct bench_tls {
    void *slot;
    char room[112];
};

__attribute__((visibility("hidden"))) __thread struct bench_tls bench_tls;

int bench_c_tls_read(int x) {
    return x + 1 + (bench_tls.slot != 0);
}

#define C_BIND_FUNCTION bench_c_bind_dynamic_tls
#include "c_bind.h"
