/*
 * The `plugin` example's C host: loads the Rust spell-checking plugin with
 * dlopen, looks each function up with dlsym as the pointer type its
 * generated header (include/plugin.h) declares, calls it, and reads errors
 * through the plugin's error API.
 *
 *   usage: host path/to/libcallgate_example_plugin.so
 *
 * Prints what it does; the last line is `result=ok` when every result was
 * the expected one.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin.h"

/* The plugin's functions, typed by the header. */
static struct {
    plugin_version_fn version;
    plugin_count_words_fn count_words;
    plugin_session_new_fn session_new;
    plugin_session_free_fn session_free;
    plugin_check_fn check;
    plugin_session_totals_fn session_totals;
    plugin_word_order_fn word_order;
    plugin_last_error_length_fn last_error_length;
    plugin_last_error_message_fn last_error_message;
    plugin_clear_last_error_fn clear_last_error;
} plugin;

static int failures = 0;

#define EXPECT(condition)                                                  \
    do {                                                                   \
        if (!(condition)) {                                                \
            fprintf(stderr, "host.c:%d: expected %s\n", __LINE__,          \
                    #condition);                                           \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static void *find(void *library, const char *name) {
    void *symbol = dlsym(library, name);
    if (symbol == NULL) {
        fprintf(stderr, "host: %s\n", dlerror());
        exit(1);
    }
    return symbol;
}

/* POSIX guarantees dlsym's result converts to the function's pointer type. */
#define FIND(library, name) ((name##_fn)find(library, #name))

static double now_ms(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec * 1e3 + (double)now.tv_nsec / 1e6;
}

/* Prints the calling thread's last error; returns 1 if it is `expected`. */
static int last_error_is(const char *expected) {
    char message[256];
    size_t length = plugin.last_error_length();
    int written = plugin.last_error_message(message, sizeof message);
    if (written < 0) {
        printf("    (no last error)\n");
        return 0;
    }
    printf("    last error (%zu bytes with its NUL): %s\n", length, message);
    return strcmp(message, expected) == 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s path/to/libcallgate_example_plugin.so\n", argv[0]);
        return 2;
    }

    double start = now_ms();
    void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        fprintf(stderr, "host: %s\n", dlerror());
        return 1;
    }
    printf("dlopen returned after %.1f ms; the dictionary loads in the background\n",
           now_ms() - start);

    plugin.version = FIND(library, plugin_version);
    plugin.count_words = FIND(library, plugin_count_words);
    plugin.session_new = FIND(library, plugin_session_new);
    plugin.session_free = FIND(library, plugin_session_free);
    plugin.check = FIND(library, plugin_check);
    plugin.session_totals = FIND(library, plugin_session_totals);
    plugin.word_order = FIND(library, plugin_word_order);
    plugin.last_error_length = FIND(library, plugin_last_error_length);
    plugin.last_error_message = FIND(library, plugin_last_error_message);
    plugin.clear_last_error = FIND(library, plugin_clear_last_error);

    printf("plugin: %s\n", plugin.version());

    /* `gate = skip` callbacks run at once; `plugin_check` waits for the dictionary. */
    const char *sentence = "The quick brown fox jumps over the lazy dog";
    int64_t words = plugin.count_words(sentence);
    printf("plugin_count_words(\"%s\") = %lld\n", sentence, (long long)words);
    EXPECT(words == 9);

    PluginSession *session = plugin.session_new();
    EXPECT(session != NULL);
    const char *typo = "Teh quick brown fox jumsp over the lazy dog";
    uint32_t unknown = 0;
    start = now_ms();
    int64_t known = plugin.check(session, typo, &unknown);
    printf("plugin_check(\"%s\") = %lld known, %u unknown (%.1f ms, waiting for the dictionary)\n",
           typo, (long long)known, unknown, now_ms() - start);
    EXPECT(known == 7 && unknown == 2);
    start = now_ms();
    known = plugin.check(session, sentence, NULL);
    printf("plugin_check(\"%s\") = %lld known (%.3f ms)\n", sentence, (long long)known,
           now_ms() - start);
    EXPECT(known == 9);
    uint64_t total_unknown = 0;
    int64_t checked = plugin.session_totals(session, &total_unknown);
    printf("plugin_session_totals: %lld checked, %llu unknown\n", (long long)checked,
           (unsigned long long)total_unknown);
    EXPECT(checked == 18 && total_unknown == 2);

    /* Errors: C gets -1, and the error API says why. */
    printf("plugin_check(session, \"   \", NULL) = %lld\n",
           (long long)plugin.check(session, "   ", NULL));
    EXPECT(last_error_is("there are no words to check"));
    printf("plugin_check(NULL, ...) = %lld\n", (long long)plugin.check(NULL, sentence, NULL));
    EXPECT(last_error_is("argument `session` is NULL"));
    const char not_utf8[] = {'c', 'a', 'f', (char)0xe9, '\0'};
    printf("plugin_count_words(\"caf\\xe9\") = %lld\n", (long long)plugin.count_words(not_utf8));
    EXPECT(last_error_is("argument `text` is not valid UTF-8 (invalid byte at offset 3)"));
    plugin.clear_last_error();
    printf("after plugin_clear_last_error: %zu bytes\n", plugin.last_error_length());
    EXPECT(plugin.last_error_length() == 0);

    /* A `local` callback: the header's `compare_by_length_fn` handed to qsort. */
    const char *fruit[] = {"banana", "fig", "cherry", "kiwi", "apple", "date"};
    size_t count = sizeof fruit / sizeof fruit[0];
    compare_by_length_fn order = plugin.word_order();
    qsort(fruit, count, sizeof fruit[0], order);
    printf("qsort with plugin_word_order():");
    for (size_t i = 0; i < count; i++) {
        printf(" %s", fruit[i]);
    }
    printf("\n");
    EXPECT(strcmp(fruit[0], "fig") == 0 && strcmp(fruit[1], "date") == 0 &&
           strcmp(fruit[2], "kiwi") == 0 && strcmp(fruit[5], "cherry") == 0);

    plugin.session_free(session);
    dlclose(library);

    if (failures != 0) {
        printf("result=failed (%d)\n", failures);
        return 1;
    }
    printf("result=ok\n");
    return 0;
}
