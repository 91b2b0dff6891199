/* What the C programs of tests/c/linked share: CHECK, which counts checks
 * and on failure prints `FAIL: file:line: message` on stderr and exits 1,
 * and last_error(), the calling thread's last error from the generated
 * header's error API ("" if none). Include after "fixture.h". */
#ifndef CALLGATE_LINKED_CHECK_H
#define CALLGATE_LINKED_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static int checks = 0;

__attribute__((noreturn, format(printf, 3, 4))) static void fail_at(const char *file, int line,
                                                                    const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "FAIL: %s:%d: ", file, line);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    fflush(stdout);
    _exit(1);
}

#define CHECK(cond, ...)                                      \
    do {                                                      \
        checks++;                                             \
        if (!(cond)) fail_at(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* The calling thread's last error ("" if none). */
static const char *last_error(void) {
    static __thread char buf[512];
    if (fixture_last_error_message(buf, sizeof buf) < 0) buf[0] = '\0';
    return buf;
}

#endif
