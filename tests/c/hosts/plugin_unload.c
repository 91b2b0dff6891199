/* dlclose of a callgate library at awkward moments, round after round.
 *
 *   plugin_unload PLUGIN during_init ROUNDS
 *       (PLUGIN_INIT_MS set) dlclose right after dlopen, while the
 *       background init still runs: the library stays mapped until the
 *       init's thread has exited, then unloads.
 *   plugin_unload PLUGIN last_error ROUNDS
 *       a thread gets a last error from a per-call callback and stays
 *       alive; dlclose unloads the library; then the thread exits (no
 *       destructor of the unloaded library may run).
 *
 * Prints rounds_ok=. */
#include "plugin_host.h"

#include <stdatomic.h>

static plugin lib;
static atomic_int failed;
static atomic_int go;

static void *fail_then_wait(void *raw) {
    int *ok = raw;
    *ok = lib.fail(3) == -1;
    atomic_store(&failed, 1);
    while (!atomic_load(&go)) fixture_sleep_ms(1);
    return NULL;
}

int main(int argc, char **argv) {
    CHECK(argc == 4, "usage: %s PLUGIN during_init|last_error ROUNDS", argv[0]);
    const char *path = argv[1];
    const char *mode = argv[2];
    int rounds = atoi(argv[3]);
    const char *name = strrchr(path, '/');
    name = name ? name : path;
    int ok_rounds = 0, held = 0;

    for (int round = 0; round < rounds; round++) {
        if (strcmp(mode, "during_init") == 0) {
            plugin_open(&lib, path);
            plugin_close(&lib);
            /* The init's thread holds the library: still mapped. */
            held += plugin_mapped(name);
        } else if (strcmp(mode, "last_error") == 0) {
            plugin_open(&lib, path);
            atomic_store(&failed, 0);
            atomic_store(&go, 0);
            int ok = 0;
            pthread_t id = fixture_spawn(fail_then_wait, &ok, 0);
            while (!atomic_load(&failed)) fixture_sleep_ms(1);
            plugin_close(&lib);
            CHECK(plugin_wait_unmapped(name, 5), "round %d: still mapped", round);
            atomic_store(&go, 1);
            fixture_join(id);
            CHECK(ok, "round %d: the failing call did not fail", round);
        } else {
            FAIL("unknown mode %s", mode);
        }
        CHECK(plugin_wait_unmapped(name, 5), "round %d: still mapped after dlclose", round);
        ok_rounds++;
    }
    printf("rounds_ok=%d\nheld_rounds=%d\nresult=ok\n", ok_rounds, held);
    return 0;
}
