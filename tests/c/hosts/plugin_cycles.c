/* Load, call from new threads, unload, many times over: the library really
 * unloads each time, and nothing accumulates — pthread keys, file
 * descriptors, memory.
 *
 *   plugin_cycles PLUGIN CYCLES
 *
 * Each cycle: dlopen the plugin; two new threads make per-call calls and a
 * failing call (each exits holding a last error); the main thread makes a
 * failing call too and keeps its last error across the unload; dlclose; the
 * plugin must be unmapped. Prints the RSS and open fds after the warm-up
 * and at the end, and the pthread key a new key gets at the end. */
#include "plugin_host.h"

#define THREADS 2
#define WARM_UP 20

static plugin lib;

static void *work(void *raw) {
    int *ok = raw;
    char message[64];
    *ok = lib.call_per_call(41) == 42 && lib.fail(7) == -1 &&
          lib.last_error_message(message, sizeof message) > 0 &&
          strcmp(message, "plugin error 7") == 0;
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 3, "usage: %s PLUGIN CYCLES", argv[0]);
    const char *path = argv[1];
    int cycles = atoi(argv[2]);
    CHECK(cycles > WARM_UP, "CYCLES must exceed %d", WARM_UP);
    const char *name = strrchr(path, '/');
    name = name ? name : path;

    long rss_warm = 0;
    int fds_warm = 0;
    for (int cycle = 0; cycle < cycles; cycle++) {
        plugin_open(&lib, path);
        int ok[THREADS];
        pthread_t ids[THREADS];
        for (int t = 0; t < THREADS; t++) ids[t] = fixture_spawn(work, &ok[t], 0);
        for (int t = 0; t < THREADS; t++) {
            fixture_join(ids[t]);
            CHECK(ok[t], "cycle %d: thread %d failed", cycle, t);
        }
        CHECK(lib.fail(cycle) == -1, "cycle %d: the failing call succeeded", cycle);
        plugin_close(&lib);
        CHECK(plugin_wait_unmapped(name, 5), "cycle %d: still mapped after dlclose", cycle);
        if (cycle + 1 == WARM_UP) {
            rss_warm = plugin_rss_kib();
            fds_warm = plugin_open_fds();
        }
    }
    long rss_end = plugin_rss_kib();
    int fds_end = plugin_open_fds();
    pthread_key_t key;
    CHECK(pthread_key_create(&key, NULL) == 0, "pthread_key_create failed after %d cycles",
          cycles);
    printf("cycles=%d\nrss_warm_kib=%ld\nrss_end_kib=%ld\nfds_warm=%d\nfds_end=%d\nnext_key=%u\n",
           cycles, rss_warm, rss_end, fds_warm, fds_end, (unsigned)key);
    CHECK(fds_end == fds_warm, "open fds went from %d to %d", fds_warm, fds_end);
    printf("result=ok\n");
    return 0;
}
