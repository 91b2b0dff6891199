/* The C side of the openmp example: parallel loops that call a Rust
 * callback from OpenMP's threads: the calling thread and the pthreads
 * libgomp creates and keeps for its later parallel regions.
 *
 * Compiled with -fopenmp when the compiler supports it; without it the
 * pragmas are left out and the loops run on the calling thread alone. */
#include <stdint.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef double (*openmp_integrand)(double);

/* 1 if this file was compiled with OpenMP. */
int openmp_enabled(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

/* Integrates `f` over [0, 1] with the midpoint rule on `points` points,
 * `regions` times over, each time in a parallel loop on `threads` OpenMP
 * threads; adds each thread's calls of `f` to `calls_per_thread[i]` (which
 * has room for `threads` counts, indexed by OpenMP thread number). Returns
 * the last estimate. */
double openmp_integrate(openmp_integrand f, int threads, int regions, int64_t points,
                        int64_t *calls_per_thread) {
    double width = 1.0 / (double)points;
    double estimate = 0.0;
#ifndef _OPENMP
    (void)threads;
#endif
    for (int region = 0; region < regions; region++) {
        double sum = 0.0;
#ifdef _OPENMP
#pragma omp parallel num_threads(threads) reduction(+ : sum)
#endif
        {
#ifdef _OPENMP
            int me = omp_get_thread_num();
#else
            int me = 0;
#endif
            int64_t calls = 0;
#ifdef _OPENMP
#pragma omp for schedule(static)
#endif
            for (int64_t i = 0; i < points; i++) {
                sum += f(((double)i + 0.5) * width);
                calls++;
            }
            calls_per_thread[me] += calls;
        }
        estimate = sum * width;
    }
    return estimate;
}
