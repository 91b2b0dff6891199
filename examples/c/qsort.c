/* The C side of the qsort example: C code that sorts with a comparator it
 * is handed, then checks that qsort came back with every value in place. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int (*qsort_compare_fn)(const void *, const void *);

/* A total order on doubles by bit pattern, NaN included: for the check. */
static int compare_bits(const void *a, const void *b) {
    uint64_t x, y;
    memcpy(&x, a, sizeof x);
    memcpy(&y, b, sizeof y);
    return (x > y) - (x < y);
}

/* Sorts `values` with qsort and `compare`, then checks that the array holds
 * the same values as before, none lost or duplicated. Returns 1 if it does,
 * 0 if not, -1 if out of memory. */
int qsort_sort_and_check(double *values, size_t count, qsort_compare_fn compare) {
    if (count == 0) return 1;
    double *before = malloc(count * sizeof *before);
    double *after = malloc(count * sizeof *after);
    if (!before || !after) {
        free(before);
        free(after);
        return -1;
    }
    memcpy(before, values, count * sizeof *values);
    qsort(values, count, sizeof *values, compare);
    /* Still here: qsort returned normally. */
    memcpy(after, values, count * sizeof *values);
    qsort(before, count, sizeof *before, compare_bits);
    qsort(after, count, sizeof *after, compare_bits);
    int same = memcmp(before, after, count * sizeof *before) == 0;
    free(before);
    free(after);
    return same;
}
