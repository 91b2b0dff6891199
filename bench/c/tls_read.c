/* The floor of a callback's call in dynamic TLS: a C function that reads a
 * thread-local pointer through its TLS descriptor (built with
 * `-mtls-dialect=gnu2`, as callgate reads its slot), in a library of its own
 * that the benchmark loads after glibc's static TLS reserve filled up, so
 * that each read calls glibc's dynamic resolver. The pointer is never set:
 * the function returns `x + 1`, having read it.
 *
 * The 4 KiB beside the pointer keep the block out of whatever is left of
 * the static TLS reserve; the benchmark checks where it went. */

struct bench_tls {
    void *slot;
    char room[4096];
};

__attribute__((visibility("hidden"))) __thread struct bench_tls bench_tls;

int bench_c_tls_read(int x) {
    return x + 1 + (bench_tls.slot != 0);
}
