/* LoadLibrary/FreeLibrary cycles (FIXTURE_INIT=none).
 *
 *   reload FIXTURE CYCLES
 *
 * A library no thread ever bound unloads on FreeLibrary (its constructor
 * only armed the gate; nothing of it is left running), and loads again
 * fresh. Once a thread is bound, an FLS callback points into the library,
 * so it pins itself: FreeLibrary leaves it loaded, and the thread's exit
 * still releases its context. */
#include "win_host.h"

static fixture lib;

static DWORD WINAPI bind_then_wait(void *raw) {
    HANDLE release = raw;
    if (lib.work(1) != 2) return 1;
    return WaitForSingleObject(release, INFINITE) == WAIT_OBJECT_0 ? 0 : 2;
}

static const char *name_of(const char *path) {
    const char *slash = strrchr(path, '\\');
    const char *fwd = strrchr(path, '/');
    if (fwd > slash) slash = fwd;
    return slash ? slash + 1 : path;
}

int main(int argc, char **argv) {
    const char *path = fixture_path_arg(argc, argv);
    int cycles = argc > 2 ? atoi(argv[2]) : 20;
    const char *name = name_of(path);
    double started = fixture_now();
    for (int i = 0; i < cycles; i++) {
        fixture_open(&lib, path);
        fixture_stats_t s = fixture_snapshot(&lib);
        CHECK(s.contexts_created == 0, "cycle %d: a fresh library has contexts", i);
        if (!FreeLibrary(lib.module)) FAIL("FreeLibrary: error %lu", GetLastError());
        CHECK(GetModuleHandleA(name) == NULL, "cycle %d: the library stayed loaded", i);
    }
    printf("cycles=%d seconds=%.3f\n", cycles, fixture_now() - started);

    fixture_open(&lib, path);
    HANDLE release = CreateEventA(NULL, TRUE, FALSE, NULL);
    HANDLE thread = fixture_spawn(bind_then_wait, release);
    fixture_stats_t s = fixture_snapshot(&lib);
    double deadline = fixture_now() + 10;
    while (s.token_binds + s.binds == 0 && fixture_now() < deadline) {
        Sleep(1);
        s = fixture_snapshot(&lib);
    }
    CHECK(fixture_wait_init(&lib, 30) == 0, "the init did not succeed");
    if (!FreeLibrary(lib.module)) FAIL("FreeLibrary: error %lu", GetLastError());
    CHECK(GetModuleHandleA(name) != NULL, "a library with a bound thread was unloaded");
    SetEvent(release);
    fixture_join(thread);
    s = fixture_wait_bound(&lib, 0, 10);
    fixture_print_stats("", &s);
    CHECK(s.contexts_bound == 0, "the bound thread's context was not released");
    puts("ok");
    return 0;
}
