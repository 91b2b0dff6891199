/* Bad input and misbehaving Rust code at run time, from a C caller.
 *
 *   bad_input FIXTURE returns       every case whose policy is to return a
 *                                   fallback: checks the value and the last
 *                                   error, and that the thread keeps working
 *   bad_input FIXTURE abort-on-panic | abort-on-error | payload-drop-panics |
 *                     panic-abort-setting
 *                                   one call whose policy is to abort: prints
 *                                   `calling=...` first; the test expects
 *                                   SIGABRT and the message on stderr
 *   bad_input FIXTURE panic-strategy
 *                                   prints `panic_aborts=` (the fixture's
 *                                   panic strategy), then calls a callback
 *                                   that panics: with unwinding panics it
 *                                   returns the fallback; built with
 *                                   panic = "abort" the process aborts */
#include "fixture_host.h"

#include <signal.h>

static fixture lib;
static char message[512];

static int checks;

/* `call` returns `expected` and the last error contains `text` (NULL: the
 * call succeeded, and the last error was not touched). */
#define EXPECT(call, expected, text)                                                         \
    do {                                                                                    \
        lib.clear_last_error();                                                             \
        __typeof__(call) got = (call);                                                      \
        CHECK(got == (expected), "%s returned %lld, expected %lld", #call, (long long)got,  \
              (long long)(expected));                                                       \
        fixture_last_error(&lib, message, sizeof message);                                  \
        if ((text) == NULL)                                                                 \
            CHECK(message[0] == '\0', "%s set the last error '%s'", #call, message);        \
        else                                                                                \
            CHECK(strstr(message, (text) ? (text) : "") != NULL,                            \
                  "%s: last error '%s' lacks '%s'", #call, message, (text) ? (text) : "");  \
        checks++;                                                                           \
    } while (0)

static void references(void) {
    int32_t value = 5, out = 0;
    EXPECT(lib.read_ref(NULL), -1, "argument `value` is NULL");
    EXPECT(lib.read_ref(&value), 5, NULL);
    EXPECT(lib.write_mut(NULL, 3), -1, "argument `out` is NULL");
    EXPECT(lib.write_mut(&out, 3), 0, NULL);
    CHECK(out == 3, "write_mut did not write");
    EXPECT(lib.read_opt(NULL), -100, NULL);
    EXPECT(lib.read_opt(&value), 5, NULL);
    EXPECT(lib.write_opt(NULL, 4), -100, NULL);
    EXPECT(lib.write_opt(&out, 4), 0, NULL);
    CHECK(out == 4, "write_opt did not write");

    /* A misaligned pointer is refused, not dereferenced. */
    _Alignas(8) unsigned char storage[sizeof(fixture_pair) + 8];
    fixture_pair pair = {40, 2};
    memcpy(storage + 4, &pair, sizeof pair);
    EXPECT(lib.pair_sum(NULL), -1, "argument `pair` is NULL");
    EXPECT(lib.pair_sum((const fixture_pair *)(void *)(storage + 4)), -1,
           "argument `pair` is not aligned to 8 bytes");
    EXPECT(lib.pair_sum(&pair), 42, NULL);
}

static void strings(void) {
    EXPECT(lib.cstr_len(NULL), -1, "argument `text` is NULL");
    EXPECT(lib.cstr_len("abc"), 3, NULL);
    EXPECT(lib.cstr_len("\xff\xfe"), 2, NULL); /* &CStr takes any bytes */
    EXPECT(lib.opt_cstr_len(NULL), -100, NULL);
    EXPECT(lib.opt_cstr_len("ab"), 2, NULL);
    EXPECT(lib.str_chars(NULL), -1, "argument `text` is NULL");
    EXPECT(lib.str_chars("h\xc3\xa9"), 2, NULL);
    EXPECT(lib.str_chars("ab\xff"), -1,
           "argument `text` is not valid UTF-8 (invalid byte at offset 2)");
    EXPECT(lib.str_chars("\xc3"), -1, "argument `text` is not valid UTF-8 (invalid byte at offset 0)");
    EXPECT(lib.str_chars("\xed\xa0\x80"), -1, "not valid UTF-8"); /* a surrogate */
    EXPECT(lib.opt_str_chars(NULL), -100, NULL);
    EXPECT(lib.opt_str_chars("x\x80"), -1, "argument `text` is not valid UTF-8");
}

static void panics(void) {
    EXPECT(lib.panic(0), 1, NULL);
    EXPECT(lib.panic(1), -2, "callback `fixture_panic` panicked: static panic message");
    EXPECT(lib.panic(2), -2, "callback `fixture_panic` panicked: formatted panic message 20");
    EXPECT(lib.panic(3), -2, "callback `fixture_panic` panicked: panic payload of a non-string type");
    lib.clear_last_error();
    lib.panic_unit(1);
    fixture_last_error(&lib, message, sizeof message);
    CHECK(strstr(message, "callback `fixture_panic_unit` panicked: unit callback panicked"),
          "panic_unit: '%s'", message);
    EXPECT(lib.panic_pointer(1), (const char *)NULL,
           "callback `fixture_panic_pointer` panicked: pointer callback panicked");
    const char *fine = lib.panic_pointer(0);
    CHECK(fine && strcmp(fine, "fine") == 0, "panic_pointer(0)");
}

static void errors(void) {
    EXPECT(lib.moody_error(0), 1, NULL);
    EXPECT(lib.moody_error(1), -1, "a well-behaved error");
    /* The error's Display panics: that is a panic, caught, not an unwind into C. */
    EXPECT(lib.moody_error(2), -2, "Display of the error panicked");
    /* Display returns fmt::Error: to_string() panics, caught the same way. */
    EXPECT(lib.moody_error(3), -2, "callback `fixture_moody_error` panicked");
    EXPECT(lib.fail(3), -1, "asked to fail with 3");
}

/* The last-error API itself: snprintf-like truncation, clearing. */
static void last_error_api(void) {
    CHECK(lib.fail(12345) == -1, "fail");
    size_t length = lib.last_error_length();
    CHECK(length == strlen("asked to fail with 12345") + 1, "length %zu", length);
    char small[6];
    int full = lib.last_error_message(small, sizeof small);
    CHECK(full == (int)length - 1 && strcmp(small, "asked") == 0, "truncated to '%s' (%d)", small,
          full);
    CHECK(lib.last_error_message(NULL, 0) == full, "length query");
    lib.clear_last_error();
    CHECK(lib.last_error_length() == 0 && lib.last_error_message(message, sizeof message) == -1,
          "clear_last_error");
    /* A success does not clear it (like errno). */
    CHECK(lib.fail(1) == -1 && lib.plain(1) == 2 && lib.last_error_length() > 0,
          "a success cleared the last error");
}

static void *other_thread_last_error(void *raw) {
    (void)raw;
    /* Last errors are per thread: the main thread's is not visible here. */
    CHECK(lib.plain(1) == 2, "plain");
    CHECK(lib.last_error_length() == 0, "another thread's last error leaked into this one");
    return NULL;
}

/* Panics in the hooks of a #[local] (`Faulty`): default and bind are part
 * of a call (its panic fallback); release runs outside any call (the value
 * is dropped and the message printed on stderr). */
enum { FAULT_DEFAULT = 1, FAULT_BIND = 2, FAULT_RELEASE = 4 };

static void *faulty_default_thread(void *raw) {
    (void)raw;
    lib.set_faults(FAULT_DEFAULT);
    EXPECT(lib.use_faulty(), -2, "Faulty::default panicked");
    EXPECT(lib.use_faulty(), -2, "Faulty::default panicked"); /* retried, still failing */
    lib.set_faults(0);
    EXPECT(lib.use_faulty(), 1, NULL);
    EXPECT(lib.use_faulty(), 2, NULL);
    return NULL;
}

static void *faulty_bind_thread(void *raw) {
    (void)raw;
    lib.set_faults(FAULT_BIND);
    EXPECT(lib.use_faulty(), -2, "Faulty::bind panicked");
    EXPECT(lib.use_faulty(), -2, "Faulty::bind panicked");
    lib.set_faults(0);
    /* The value may have served an earlier thread (contexts are recycled):
     * its count goes on, one per successful call. */
    int32_t uses = lib.use_faulty();
    CHECK(uses > 0, "use_faulty after bind panics: %d", uses);
    EXPECT(lib.use_faulty(), uses + 1, NULL);
    return NULL;
}

static void *faulty_release_thread(void *raw) {
    (void)raw;
    CHECK(lib.use_faulty() > 0, "use_faulty");
    lib.set_faults(FAULT_RELEASE);
    return NULL; /* release panics in callgate's key destructor */
}

static void *faulty_after_release_thread(void *raw) {
    (void)raw;
    /* This thread gets the context the last thread released (the free list
     * is LIFO and nothing else runs), whose Faulty was dropped when its
     * release panicked: a fresh value. */
    EXPECT(lib.use_faulty(), 1, NULL);
    return NULL;
}

static void *faulty_per_call_thread(void *raw) {
    (void)raw;
    CHECK(lib.use_faulty_per_call() > 0, "use_faulty_per_call");
    /* Same context again (LIFO), its value dropped by the panicking release. */
    EXPECT(lib.use_faulty_per_call(), 1, NULL);
    return NULL;
}

static void local_hooks(void) {
    /* Only the main thread stays bound (the init thread may still exit). */
    fixture_stats_t settled = fixture_wait_bound(&lib, 1, 10);
    CHECK(settled.contexts_bound == 1, "%" PRIu64 " contexts bound", settled.contexts_bound);
    fixture_join(fixture_spawn(faulty_default_thread, NULL, 0));
    fixture_join(fixture_spawn(faulty_bind_thread, NULL, 0));
    uint64_t releases = lib.faulty_releases();
    fixture_join(fixture_spawn(faulty_release_thread, NULL, 0));
    CHECK(lib.faulty_releases() == releases + 1, "Faulty::release did not run at thread exit");
    lib.set_faults(0);
    fixture_join(fixture_spawn(faulty_after_release_thread, NULL, 0));

    /* per_call (on a thread that is not bound): release runs when the call
     * returns; the call's result is unaffected and the next call gets a
     * fresh value. */
    lib.set_faults(FAULT_RELEASE);
    releases = lib.faulty_releases();
    fixture_join(fixture_spawn(faulty_per_call_thread, NULL, 0));
    CHECK(lib.faulty_releases() == releases + 2, "per-call release did not run");
    lib.set_faults(0);
}

/* A nested call asking for a #[local] an outer call holds gets an error. */
static int64_t reenter_hold_token(int32_t depth) {
    return lib.hold_token(depth, NULL);
}

static void local_reentry(void) {
    EXPECT(lib.hold_token(1, reenter_hold_token), -2,
           "#[local] value `callgate_fixture::Token` is already in use by an outer call on this "
           "thread");
    int64_t token = lib.token();
    CHECK(token > 0, "token after the re-entry error");
    EXPECT(lib.hold_token(0, NULL), token, NULL);
}

static void returns(void) {
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    fixture_stats_t before = fixture_snapshot(&lib);
    references();
    strings();
    panics();
    errors();
    last_error_api();
    fixture_join(fixture_spawn(other_thread_last_error, NULL, 0));
    local_hooks();
    local_reentry();
    /* The thread is still in working order after all that. */
    CHECK(lib.work(1) == 2 && lib.token() > 0, "the thread no longer works");
    fixture_stats_t after = fixture_snapshot(&lib);
    printf("checks=%d\npanics_caught=%" PRIu64 "\nerrors_returned=%" PRIu64 "\n", checks,
           after.panics_caught - before.panics_caught,
           after.errors_returned - before.errors_returned);
}

static void panic_strategy(void) {
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    printf("panic_aborts=%d\n", lib.panic_aborts());
    fflush(stdout);
    EXPECT(lib.panic(1), -2, "callback `fixture_panic` panicked: static panic message");
    printf("survived=1\n");
}

static void abort_case(const char *mode) {
    CHECK(fixture_wait_init(&lib, 30) == 0, "init not ready");
    printf("calling=%s\n", mode);
    fflush(stdout);
    if (strcmp(mode, "abort-on-panic") == 0) {
        CHECK(lib.abort_on_panic(0) == 0, "no panic, no abort");
        lib.abort_on_panic(1);
    } else if (strcmp(mode, "abort-on-error") == 0) {
        int32_t value = 3;
        CHECK(lib.abort_on_error(&value) == 3, "no error, no abort");
        lib.abort_on_error(NULL);
    } else if (strcmp(mode, "payload-drop-panics") == 0) {
        lib.panic(4);
    } else if (strcmp(mode, "panic-abort-setting") == 0) {
        /* CALLGATE=panic=abort overrides the callback's on_panic value. */
        lib.panic(1);
    } else {
        FAIL("unknown mode %s", mode);
    }
    printf("survived=%s\n", mode);
    FAIL("%s: the process was expected to abort", mode);
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    const char *mode = argc > 2 ? argv[2] : "returns";
    fixture_open(&lib, path, RTLD_NOW);
    if (strcmp(mode, "returns") == 0) {
        returns();
    } else if (strcmp(mode, "panic-strategy") == 0) {
        panic_strategy();
    } else {
        abort_case(mode);
    }
    printf("result=ok\n");
    return 0;
}
