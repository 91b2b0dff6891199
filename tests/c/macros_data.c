/* The C side of the data mapping tests: the usual C ways of handling
 * (pointer, length) arguments, caller buffers and owned results. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t (*md_text_cb)(int64_t value, char *out, size_t out_len);
typedef uint8_t *(*md_bytes_cb)(size_t count, size_t *result_len);
typedef void (*md_bytes_free)(uint8_t *ptr, size_t len);

char *md_text_by_size_query(md_text_cb cb, int64_t value);
int64_t md_sum_returned_bytes(md_bytes_cb cb, md_bytes_free release, size_t count);

/* Asks for the length with (NULL, 0), then allocates exactly that much and
 * asks again: the snprintf idiom. Returns a malloc()ed string or NULL. */
char *md_text_by_size_query(md_text_cb cb, int64_t value) {
    int64_t needed = cb(value, NULL, 0);
    if (needed < 0) return NULL;
    char *text = malloc((size_t)needed + 1);
    if (text == NULL) return NULL;
    if (cb(value, text, (size_t)needed + 1) != needed) {
        free(text);
        return NULL;
    }
    return text;
}

/* Sums the `count` bytes of an owned array and frees it; -1 if the call
 * failed (NULL for a non-zero count: an empty array comes as (NULL, 0)). */
int64_t md_sum_returned_bytes(md_bytes_cb cb, md_bytes_free release, size_t count) {
    size_t len = 0;
    uint8_t *bytes = cb(count, &len);
    if (bytes == NULL && count != 0) return -1;
    int64_t sum = 0;
    for (size_t i = 0; i < len; i++) sum += bytes[i];
    release(bytes, len);
    return sum;
}
