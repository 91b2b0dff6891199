/* Many callgate libraries in one process: loads every copy of the plugin,
 * calls each from 4 threads, checks a new link-map namespace still gets its
 * own libc, unloads them all.
 *
 *   plugins DIR COUNT bound      the threads bind to every plugin (pinning
 *                                them) and call it and its `#[local]`
 *                                counter; reports how many copies got
 *                                static TLS
 *   plugins DIR COUNT per_call   the threads only make per-call calls and
 *                                leave a last error in every plugin, then
 *                                exit; after dlclose every copy is unmapped
 *
 * DIR holds libcallgate_plugin_000.so ... (COUNT of them), as
 * tests/hosts/plugins.rs generates them. Prints loaded=, static_tls=, calls=,
 * and misaligned_mallocs= (malloc_check.h: the copies in dynamic TLS make
 * the TLS descriptor's resolver allocate each thread's block). */
#include "plugin_host.h"
#include "malloc_check.h"

#define THREADS 4
#define CALLS 25
#define MAX_PLUGINS 1000

static plugin plugins[MAX_PLUGINS];
static int count;
static int bound;
static int in_static_tls[THREADS][MAX_PLUGINS];

typedef struct {
    int index;
    int ok;
} worker;

static void *work(void *raw) {
    worker *w = raw;
    w->ok = 1;
    for (int i = 0; i < count; i++) {
        plugin *p = &plugins[i];
        for (int call = 0; call < CALLS; call++) {
            int32_t value = i * 1000 + call;
            int32_t got = bound ? p->call(value) : p->call_per_call(value);
            if (got != value + 1) w->ok = 0;
            /* The thread's `#[local]` count in this copy: the thread is
             * bound, so the value persists from call to call. */
            if (bound && p->count() != call + 1) w->ok = 0;
        }
        if (!bound) {
            char message[64];
            if (p->fail(i) != -1) w->ok = 0;
            if (p->last_error_message(message, sizeof message) < 0) w->ok = 0;
        }
        in_static_tls[w->index][i] = fixture_in_static_tls(p->tls_address());
    }
    return NULL;
}

static void path_of(char *out, size_t len, const char *dir, int index) {
    snprintf(out, len, "%s/libcallgate_plugin_%03d.so", dir, index);
}

int main(int argc, char **argv) {
    CHECK(argc == 4, "usage: %s DIR COUNT bound|per_call", argv[0]);
    const char *dir = argv[1];
    count = atoi(argv[2]);
    CHECK(count > 0 && count <= MAX_PLUGINS, "COUNT out of range");
    bound = strcmp(argv[3], "bound") == 0;
    CHECK(bound || strcmp(argv[3], "per_call") == 0, "unknown mode %s", argv[3]);

    for (int i = 0; i < count; i++) {
        char path[4096];
        path_of(path, sizeof path, dir, i);
        if (plugin_try_open(&plugins[i], path) != 0)
            FAIL("plugin %d of %d does not load: %s", i, count, dlerror());
    }
    printf("loaded=%d\n", count);

    worker workers[THREADS];
    pthread_t ids[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){.index = t};
        ids[t] = fixture_spawn(work, &workers[t], 0);
    }
    for (int t = 0; t < THREADS; t++) {
        fixture_join(ids[t]);
        CHECK(workers[t].ok, "thread %d got a wrong result", t);
    }

    int static_tls = 0;
    uint64_t calls = 0;
    for (int i = 0; i < count; i++) {
        for (int t = 1; t < THREADS; t++)
            CHECK(in_static_tls[t][i] == in_static_tls[0][i],
                  "plugin %d: static TLS for some threads only", i);
        static_tls += in_static_tls[0][i];
        /* Bound: each call and a count; per call: each call and a fail. */
        uint64_t expected = (uint64_t)THREADS * (bound ? 2 * CALLS : CALLS + 1);
        CHECK(plugins[i].calls() == expected, "plugin %d served %" PRIu64 " calls, not %" PRIu64,
              i, plugins[i].calls(), expected);
        calls += plugins[i].calls();
        /* One context per thread, reused from call to call (per call: the
         * one the thread's last call cached), in static and dynamic TLS. */
        CHECK(plugins[i].contexts() <= THREADS, "plugin %d created %" PRIu64 " contexts", i,
              plugins[i].contexts());
    }
    printf("static_tls=%d\ncalls=%" PRIu64 "\n", static_tls, calls);

    /* A new namespace needs room for its own libc's TLS. */
    void *libc = dlmopen(LM_ID_NEWLM, "libc.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK(libc != NULL, "dlmopen(LM_ID_NEWLM, libc.so.6) after %d plugins: %s", count, dlerror());
    CHECK(dlclose(libc) == 0, "dlclose of the new namespace's libc: %s", dlerror());
    printf("dlmopen=ok\n");

    for (int i = 0; i < count; i++) plugin_close(&plugins[i]);
    int mapped = 0;
    if (!bound) {
        for (int i = 0; i < count; i++) {
            char name[64];
            snprintf(name, sizeof name, "/libcallgate_plugin_%03d.so", i);
            mapped += !plugin_wait_unmapped(name, 5);
        }
        CHECK(mapped == 0, "%d of %d plugins stayed mapped after dlclose", mapped, count);
    }
    printf("malloc_checked=%d\nmisaligned_mallocs=%ld\n", MALLOC_CHECKED, malloc_misaligned());
    printf("still_mapped=%d\nresult=ok\n", mapped);
    return 0;
}
