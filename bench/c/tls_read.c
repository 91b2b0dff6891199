/* The floor of a callback's call in dynamic TLS: a C function that reads a
 * thread-local pointer through its TLS descriptor (built with
 * `-mtls-dialect=gnu2`, as callgate reads its slot), in a library of its own
 * that the benchmark loads after glibc's static TLS reserve filled up, so
 * that each read calls glibc's dynamic resolver. The pointer is never set:
 * the function returns `x + 1`, having read it.
 *
 * The bytes beside the pointer make the block (128 bytes) larger than the
 * benchmark's cdylib's, so that it cannot fit in what is left of the
 * static TLS reserve where a copy of that library did not (the benchmark
 * checks where it went), and keep it as small as that block, so that
 * glibc's allocation of a new thread's block (on its first read) is the
 * size of the one a callback's first call makes glibc allocate there. */

struct bench_tls {
    void *slot;
    char room[120];
};

__attribute__((visibility("hidden"))) __thread struct bench_tls bench_tls;

int bench_c_tls_read(int x) {
    return x + 1 + (bench_tls.slot != 0);
}
