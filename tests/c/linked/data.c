/* Data across the boundary, from C, through the header callgate generates
 * from the fixture (tests/fixture, `data` module): slices as (pointer,
 * length), owned results and their free functions, caller buffers.
 *
 * Unlike the dlopen hosts in tests/c/hosts, this program includes the
 * generated `fixture.h` and links against the fixture, so it is compiled by
 * the test (tests/hosts/data.rs) once the library exists.
 *
 *   data boundary            every (pointer, length) check, owned result and
 *                            buffer case
 *   data threads N           N strings, counters and arrays made on one
 *                            thread and freed on another
 *   data cycles N [no-rss]   N create/free cycles of each owned kind; the
 *                            RSS must stay flat (`no-rss`: not checked, for
 *                            valgrind)
 *
 * Prints `key=value` lines and `result=ok`; a failed check prints
 * `FAIL: file:line: message` on stderr and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "check.h"

#define EXPECT_ERROR(expected)                                                        \
    CHECK(strcmp(last_error(), (expected)) == 0, "last error \"%s\", expected \"%s\"", \
          last_error(), (expected))

#define EXPECT_NO_ERROR() CHECK(fixture_last_error_length() == 0, "unexpected error: %s", last_error())

/* Resident set size of this process in KiB, from /proc/self/statm. */
static long rss_kib(void) {
    FILE *statm = fopen("/proc/self/statm", "r");
    if (!statm) fail_at(__FILE__, __LINE__, "open /proc/self/statm: %s", strerror(errno));
    long size = 0, resident = 0;
    int read = fscanf(statm, "%ld %ld", &size, &resident);
    fclose(statm);
    if (read != 2) fail_at(__FILE__, __LINE__, "parse /proc/self/statm");
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static void *xmalloc(size_t size) {
    void *p = malloc(size);
    if (!p) fail_at(__FILE__, __LINE__, "out of memory (%zu bytes)", size);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Slices                                                                    */
/* ------------------------------------------------------------------------ */

static void slices(void) {
    static const uint8_t hello[] = {'h', 'e', 'l', 'l', 'o'};
    char message[256];

    fixture_clear_last_error();
    CHECK(fixture_sum_bytes(hello, sizeof hello) == 532, "sum of \"hello\"");
    /* (NULL, 0) is the empty slice, not an error. */
    CHECK(fixture_sum_bytes(NULL, 0) == 0, "(NULL, 0) is empty");
    CHECK(fixture_sum_bytes(hello, 0) == 0, "(p, 0) is empty");
    EXPECT_NO_ERROR();
    /* NULL with a length is an error naming the argument. */
    CHECK(fixture_sum_bytes(NULL, 5) == -1, "(NULL, 5)");
    EXPECT_ERROR("argument `data` is NULL but its length is 5");
    /* A length no memory can hold. */
    CHECK(fixture_sum_bytes(hello, SIZE_MAX) == -1, "(p, SIZE_MAX)");
    snprintf(message, sizeof message,
             "argument `data` is too long: %zu elements of 1 bytes do not fit in the address "
             "space",
             (size_t)SIZE_MAX);
    EXPECT_ERROR(message);

    _Alignas(8) int64_t values[5] = {1, 2, 3, 4, 5};
    CHECK(fixture_sum_i64(values, 4) == 10, "sum of 4 values");
    CHECK(fixture_sum_i64(NULL, 0) == 0, "(NULL, 0) of int64_t");
    /* Misaligned for int64_t: refused before anything is read. */
    const int64_t *misaligned = (const int64_t *)(void *)((const char *)values + 4);
    CHECK(fixture_sum_i64(misaligned, 2) == -1, "misaligned");
    EXPECT_ERROR("argument `values` is not aligned to 8 bytes");
    CHECK(fixture_sum_i64(misaligned, 0) == -1, "misaligned, length 0");
    EXPECT_ERROR("argument `values` is not aligned to 8 bytes");
    /* Byte size over PTRDIFF_MAX, and a byte size that overflows size_t. */
    size_t too_many = (size_t)PTRDIFF_MAX / 8 + 1;
    CHECK(fixture_sum_i64(values, too_many) == -1, "PTRDIFF_MAX / 8 + 1 elements");
    snprintf(message, sizeof message,
             "argument `values` is too long: %zu elements of 8 bytes do not fit in the address "
             "space",
             too_many);
    EXPECT_ERROR(message);
    CHECK(fixture_sum_i64(values, SIZE_MAX / 4) == -1, "SIZE_MAX / 4 elements");

    /* Option<&[u8]>: (NULL, 0) is None, (p, 0) an empty Some. */
    CHECK(fixture_opt_len(NULL, 0) == -100, "(NULL, 0) is None");
    CHECK(fixture_opt_len(hello, 0) == 0, "(p, 0) is Some(empty)");
    CHECK(fixture_opt_len(hello, 3) == 3, "(p, 3)");
    CHECK(fixture_opt_len(NULL, 2) == -1, "(NULL, 2) for an Option");
    EXPECT_ERROR("argument `data` is NULL but its length is 2");

    /* 1 MiB buffers, both ways. */
    size_t mib = (size_t)1 << 20;
    uint8_t *ones = xmalloc(mib);
    memset(ones, 1, mib);
    CHECK(fixture_sum_bytes(ones, mib) == (int64_t)mib, "sum of 1 MiB of ones");
    free(ones);
    size_t words = mib / sizeof(uint32_t);
    uint32_t *filled = xmalloc(mib);
    CHECK(fixture_fill_u32(filled, words, 0xC0FFEE) == (int64_t)words, "fill 1 MiB");
    size_t unfilled = 0;
    for (size_t i = 0; i < words; i++) unfilled += filled[i] != 0xC0FFEE;
    CHECK(unfilled == 0, "%zu words not filled", unfilled);
    free(filled);
    CHECK(fixture_fill_u32(NULL, 0, 1) == 0, "fill (NULL, 0)");

    /* `#[len = count]`: one signed length for two arrays. */
    double a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    CHECK(fixture_dot(a, b, 3) == 32.0, "dot product");
    CHECK(fixture_dot(NULL, NULL, 0) == 0.0, "dot of (NULL, NULL, 0)");
    CHECK(fixture_dot(a, b, -1) == -1.0, "negative count");
    EXPECT_ERROR("argument `count` is not a valid length: -1");
    CHECK(fixture_dot(a, NULL, 3) == -1.0, "NULL second array");
    EXPECT_ERROR("argument `b` is NULL but its length is 3");

    /* Text by (pointer, length): NULs are ordinary characters; UTF-8 is checked. */
    static const char text[] = {'a', '\0', 'b', (char)0xc3, (char)0xa9};
    CHECK(fixture_text_chars(text, 5) == 4, "chars of \"a\\0b\\u00e9\"");
    CHECK(fixture_text_chars(text, 1) == 1, "chars of \"a\"");
    CHECK(fixture_text_chars(NULL, 0) == 0, "chars of (NULL, 0)");
    CHECK(fixture_text_chars(text, 4) == -1, "a cut UTF-8 sequence");
    EXPECT_ERROR("argument `text` is not valid UTF-8 (invalid byte at offset 3)");
    CHECK(fixture_text_chars(NULL, 1) == -1, "(NULL, 1) text");
    EXPECT_ERROR("argument `text` is NULL but its length is 1");
}

/* ------------------------------------------------------------------------ */
/* Owned results                                                             */
/* ------------------------------------------------------------------------ */

static void owned(void) {
    fixture_clear_last_error();
    char *string = fixture_string_new("a b", 3, 7);
    CHECK(string != NULL && strcmp(string, "a b#7") == 0, "string_new");
    fixture_string_free(string);
    string = fixture_string_new(NULL, 0, 1);
    CHECK(string != NULL && strcmp(string, "#1") == 0, "string_new from (NULL, 0)");
    fixture_string_free(string);
    EXPECT_NO_ERROR();
    /* A NUL inside the text cannot go into a C string: NULL and the error. */
    CHECK(fixture_string_new("ab\0c", 4, 1) == NULL, "string_new with a NUL");
    EXPECT_ERROR("nul byte found in provided data at position: 2");
    fixture_string_free(NULL);

    string = fixture_string_maybe(42);
    CHECK(string != NULL && strcmp(string, "42") == 0, "string_maybe(42)");
    fixture_string_free(string);
    fixture_clear_last_error();
    CHECK(fixture_string_maybe(0) == NULL, "string_maybe(0) is None");
    EXPECT_NO_ERROR();
    CHECK(fixture_string_panics() == NULL, "a panic returns NULL");
    EXPECT_ERROR("callback `fixture_string_panics` panicked: no string today");

    uint64_t alive = fixture_counters_alive();
    Counter *counter = fixture_counter_new(5);
    CHECK(counter != NULL, "counter_new");
    CHECK(fixture_counters_alive() == alive + 1, "one more counter");
    CHECK(fixture_counter_next(counter) == 5, "counter 5");
    CHECK(fixture_counter_next(counter) == 6, "counter 6");
    fixture_counter_free(counter);
    CHECK(fixture_counters_alive() == alive, "the counter was dropped");
    fixture_counter_free(NULL);

    size_t len = 99;
    uint8_t *bytes = fixture_repeat(7, 3, &len);
    CHECK(bytes != NULL && len == 3, "repeat 3");
    CHECK(bytes[0] == 7 && bytes[1] == 7 && bytes[2] == 7, "repeat contents");
    fixture_bytes_free(bytes, len);
    size_t mib = (size_t)1 << 20;
    bytes = fixture_repeat(1, mib, &len);
    CHECK(bytes != NULL && len == mib, "repeat 1 MiB");
    size_t sum = 0;
    for (size_t i = 0; i < len; i++) sum += bytes[i];
    CHECK(sum == mib, "1 MiB of ones");
    fixture_bytes_free(bytes, len);
    /* Empty: NULL and length 0, which the free function takes. */
    len = 99;
    bytes = fixture_repeat(1, 0, &len);
    CHECK(bytes == NULL && len == 0, "repeat 0: %p, %zu", (void *)bytes, len);
    fixture_bytes_free(bytes, len);
    /* Failure: NULL, and *result_len is 0. */
    len = 99;
    CHECK(fixture_repeat(1, (size_t)1 << 40, &len) == NULL, "repeat too many");
    CHECK(len == 0, "result_len after a failure: %zu", len);
    EXPECT_ERROR("1099511627776 bytes is too many");
    CHECK(fixture_repeat(1, 3, NULL) == NULL, "NULL result_len");
    EXPECT_ERROR("argument `result_len` is NULL");
    fixture_bytes_free(NULL, 5);

    uint32_t *squares = fixture_squares(5, &len);
    CHECK(squares != NULL && len == 5, "squares");
    CHECK(squares[0] == 0 && squares[1] == 1 && squares[4] == 16, "squares contents");
    fixture_u32s_free(squares, len);
    len = 99;
    squares = fixture_squares(0, &len);
    CHECK(squares == NULL && len == 0, "squares 0: %p, %zu", (void *)squares, len);
    fixture_u32s_free(squares, len);
}

/* ------------------------------------------------------------------------ */
/* Caller-supplied buffers                                                   */
/* ------------------------------------------------------------------------ */

static void buffers(void) {
    char buf[8];
    /* Like snprintf: the full length comes back, what fits is written. */
    memset(buf, 'x', sizeof buf);
    CHECK(fixture_describe(12345, buf, sizeof buf) == 11, "describe 12345");
    CHECK(strcmp(buf, "value=1") == 0, "truncated text: \"%s\"", buf);
    memset(buf, 'x', sizeof buf);
    CHECK(fixture_describe(1, buf, sizeof buf) == 7, "describe 1");
    CHECK(strcmp(buf, "value=1") == 0, "exact fit: \"%s\"", buf);
    memset(buf, 'x', sizeof buf);
    CHECK(fixture_describe(1, buf, 1) == 7, "one byte: the NUL only");
    CHECK(buf[0] == '\0' && buf[1] == 'x', "one byte buffer");
    /* The size query: (NULL, 0), and a buffer of length 0 that is not touched. */
    CHECK(fixture_describe(-5, NULL, 0) == 8, "size query");
    CHECK(fixture_describe(-5, buf, 0) == 8 && buf[0] == '\0' && buf[1] == 'x', "length 0");
    CHECK(fixture_describe(1, NULL, 5) == -1, "(NULL, 5) buffer");
    EXPECT_ERROR("argument `out` is NULL but its length is 5");

    uint64_t out[3] = {9, 9, 9};
    CHECK(fixture_squares_into(5, out, 3) == 5, "squares_into");
    CHECK(out[0] == 0 && out[1] == 1 && out[2] == 4, "the squares that fit");
    CHECK(fixture_squares_into(5, NULL, 0) == 5, "squares_into size query");
    _Alignas(8) unsigned char storage[4 * sizeof(uint64_t)];
    uint64_t *odd = (uint64_t *)(void *)(storage + 1);
    CHECK(fixture_squares_into(1, odd, 2) == -1, "misaligned buffer");
    EXPECT_ERROR("argument `out` is not aligned to 8 bytes");

    /* `#[len = size]`: the buffer's length is the parameter after it. */
    CHECK(fixture_copy_text("hello", 5, buf, 3) == 5, "copy_text");
    CHECK(strcmp(buf, "he") == 0, "copied \"%s\"", buf);

    /* Overlapping arguments, where the callback writes one of them: an
     * error before anything is read or written, naming both. */
    double values[4] = {1, 2, 3, 4};
    CHECK(fixture_scale_into(values, values, 4, 2.0) == -1, "in place");
    EXPECT_ERROR("arguments `src` and `dst` overlap, and the callback writes `dst`: pass separate "
                 "memory (a callback that works in place takes one `&mut` argument, or raw "
                 "pointers)");
    CHECK(fixture_scale_into(values, values + 1, 3, 2.0) == -1, "shifted by one");
    CHECK(values[0] == 1 && values[1] == 2 && values[2] == 3 && values[3] == 4,
          "nothing written");
    CHECK(fixture_scale_into(values, values + 2, 2, 10.0) == 2, "adjacent halves");
    CHECK(values[2] == 10 && values[3] == 20, "adjacent halves scaled");
    CHECK(fixture_scale_into(values, values, 0, 2.0) == 0, "empty ranges never overlap");
    strcpy(buf, "hello");
    CHECK(fixture_copy_text(buf, 5, buf + 2, 4) == -1, "text copied onto itself");
    EXPECT_ERROR("arguments `text` and `buf` overlap, and the callback writes `buf`: pass separate "
                 "memory (a callback that works in place takes one `&mut` argument, or raw "
                 "pointers)");
    CHECK(strcmp(buf, "hello") == 0, "the text is left as it was: \"%s\"", buf);

    /* 1 MiB buffer. */
    size_t mib = (size_t)1 << 20;
    uint64_t *big = xmalloc(mib);
    size_t count = mib / sizeof(uint64_t);
    CHECK(fixture_squares_into((uint32_t)count, big, count) == (int64_t)count, "1 MiB buffer");
    CHECK(big[count - 1] == (uint64_t)(count - 1) * (count - 1), "the last square");
    free(big);
}

/* ------------------------------------------------------------------------ */
/* Made on one thread, freed on another                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    size_t n;
    char **strings;
    Counter **counters;
    uint8_t **arrays;
    size_t *lengths;
} batch;

static void *produce(void *raw) {
    batch *b = raw;
    for (size_t i = 0; i < b->n; i++) {
        b->strings[i] = fixture_string_new("made here", 9, (uint32_t)i);
        b->counters[i] = fixture_counter_new((int64_t)i);
        b->arrays[i] = fixture_repeat((uint8_t)i, i % 100, &b->lengths[i]);
        /* Every 100th array is empty: (NULL, 0). */
        if (!b->strings[i] || !b->counters[i] || (!b->arrays[i] && i % 100 != 0)) {
            fail_at(__FILE__, __LINE__, "producing item %zu: %s", i, last_error());
        }
    }
    return NULL;
}

static void *consume(void *raw) {
    batch *b = raw;
    char expected[64];
    for (size_t i = 0; i < b->n; i++) {
        snprintf(expected, sizeof expected, "made here#%zu", i);
        CHECK(strcmp(b->strings[i], expected) == 0, "string %zu", i);
        CHECK(fixture_counter_next(b->counters[i]) == (int64_t)i, "counter %zu", i);
        CHECK(b->lengths[i] == i % 100, "array %zu", i);
        fixture_string_free(b->strings[i]);
        fixture_counter_free(b->counters[i]);
        fixture_bytes_free(b->arrays[i], b->lengths[i]);
    }
    return NULL;
}

static void run_thread(void *(*start)(void *), void *arg) {
    pthread_t id;
    int rc = pthread_create(&id, NULL, start, arg);
    if (rc != 0) fail_at(__FILE__, __LINE__, "pthread_create: %s", strerror(rc));
    rc = pthread_join(id, NULL);
    if (rc != 0) fail_at(__FILE__, __LINE__, "pthread_join: %s", strerror(rc));
}

static void threads(size_t n) {
    uint64_t alive = fixture_counters_alive();
    batch b = {n, xmalloc(n * sizeof(char *)), xmalloc(n * sizeof(Counter *)),
               xmalloc(n * sizeof(uint8_t *)), xmalloc(n * sizeof(size_t))};
    run_thread(produce, &b);
    CHECK(fixture_counters_alive() == alive + n, "%zu counters alive", n);
    run_thread(consume, &b);
    CHECK(fixture_counters_alive() == alive, "every counter freed on the other thread");
    free(b.strings);
    free(b.counters);
    free(b.arrays);
    free(b.lengths);
    printf("moved=%zu\n", n);
}

/* ------------------------------------------------------------------------ */
/* Create/free cycles                                                        */
/* ------------------------------------------------------------------------ */

static void cycle(size_t i) {
    char *string = fixture_string_new("cycle", 5, (uint32_t)i);
    Counter *counter = fixture_counter_new((int64_t)i);
    size_t len = 0;
    uint8_t *bytes = fixture_repeat((uint8_t)i, 64, &len);
    if (!string || !counter || !bytes || len != 64) {
        fail_at(__FILE__, __LINE__, "cycle %zu: %s", i, last_error());
    }
    fixture_string_free(string);
    fixture_counter_free(counter);
    fixture_bytes_free(bytes, len);
}

static void cycles(size_t n, int check_rss) {
    uint64_t alive = fixture_counters_alive();
    size_t warmup = n / 10;
    for (size_t i = 0; i < warmup; i++) cycle(i);
    long rss_warm = rss_kib();
    for (size_t i = warmup; i < n; i++) cycle(i);
    long rss_end = rss_kib();
    CHECK(fixture_counters_alive() == alive, "every counter freed");
    printf("cycles=%zu\nrss_warm_kib=%ld\nrss_end_kib=%ld\n", n, rss_warm, rss_end);
    if (check_rss) {
        CHECK(rss_end <= rss_warm + 4096, "RSS grew from %ld to %ld KiB", rss_warm, rss_end);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    size_t n = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 0;
    if (strcmp(mode, "boundary") == 0) {
        slices();
        owned();
        buffers();
    } else if (strcmp(mode, "threads") == 0 && n > 0) {
        threads(n);
    } else if (strcmp(mode, "cycles") == 0 && n > 0) {
        cycles(n, !(argc > 3 && strcmp(argv[3], "no-rss") == 0));
    } else {
        fprintf(stderr, "usage: %s boundary | threads N | cycles N [no-rss]\n", argv[0]);
        return 2;
    }
    printf("checks=%d\nresult=ok\n", checks);
    return 0;
}
