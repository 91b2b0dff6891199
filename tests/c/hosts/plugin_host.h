/* Shared by the plugin hosts (plugins.c, plugin_cycles.c, plugin_unload.c):
 * load copies of the plugin cdylib that tests/hosts/plugins.rs generates from
 * tests/plugin/template.rs, look up its symbols, and read what the process
 * holds (mappings, RSS, open fds). Failing checks use fixture_host.h's
 * FAIL/CHECK. */
#ifndef CALLGATE_PLUGIN_HOST_H
#define CALLGATE_PLUGIN_HOST_H

#include "fixture_host.h"

#include <dirent.h>

/* The plugin's exported functions (tests/plugin/template.rs). */
typedef struct {
    void *handle;
    int32_t (*call)(int32_t value);
    int32_t (*call_per_call)(int32_t value);
    int32_t (*count)(void);
    int32_t (*fail)(int32_t code);
    uint64_t (*calls)(void);
    uint64_t (*contexts)(void);
    void *(*tls_address)(void);
    int (*last_error_message)(char *buf, size_t len);
} plugin;

#define PLUGIN_SYM(p, field, name) \
    ((p)->field = (__typeof__((p)->field))fixture_symbol((p)->handle, name))

/* dlopen()s the plugin at `path` (RTLD_NOW | RTLD_LOCAL); returns 0, or -1
 * with dlerror() left for the caller when it does not load. */
static inline int plugin_try_open(plugin *p, const char *path) {
    memset(p, 0, sizeof *p);
    p->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!p->handle) return -1;
    PLUGIN_SYM(p, call, "plugin_call");
    PLUGIN_SYM(p, call_per_call, "plugin_call_per_call");
    PLUGIN_SYM(p, count, "plugin_count");
    PLUGIN_SYM(p, fail, "plugin_fail");
    PLUGIN_SYM(p, calls, "plugin_calls");
    PLUGIN_SYM(p, contexts, "plugin_contexts");
    PLUGIN_SYM(p, tls_address, "plugin_tls_address");
    PLUGIN_SYM(p, last_error_message, "plugin_last_error_message");
    return 0;
}

static inline void plugin_open(plugin *p, const char *path) {
    if (plugin_try_open(p, path) != 0) FAIL("dlopen(%s): %s", path, dlerror());
}

static inline void plugin_close(plugin *p) {
    CHECK(dlclose(p->handle) == 0, "dlclose: %s", dlerror());
    p->handle = NULL;
}

/* True when /proc/self/maps maps a file whose path contains `name`. */
static inline int plugin_mapped(const char *name) {
    FILE *maps = fopen("/proc/self/maps", "r");
    CHECK(maps != NULL, "open /proc/self/maps");
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, maps)) found = strstr(line, name) != NULL;
    fclose(maps);
    return found;
}

/* Lets the loader drop libraries that were only kept for a thread that has
 * exited since (a background init's): glibc unloads them at the next
 * dlclose, of any library. */
static inline void plugin_collect(void) {
    void *libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    CHECK(libm != NULL, "dlopen(libm.so.6): %s", dlerror());
    CHECK(dlclose(libm) == 0, "dlclose(libm): %s", dlerror());
}

/* Waits up to `seconds` for `name` to be unmapped, collecting meanwhile. */
static inline int plugin_wait_unmapped(const char *name, double seconds) {
    double deadline = fixture_now() + seconds;
    for (;;) {
        plugin_collect();
        if (!plugin_mapped(name)) return 1;
        if (fixture_now() > deadline) return 0;
        fixture_sleep_ms(1);
    }
}

/* How many file descriptors the process has open. */
static inline int plugin_open_fds(void) {
    DIR *dir = opendir("/proc/self/fd");
    CHECK(dir != NULL, "open /proc/self/fd");
    int count = 0;
    while (readdir(dir)) count++;
    closedir(dir);
    return count - 3; /* ".", ".." and the directory's own fd */
}

/* The resident set size in KiB (VmRSS of /proc/self/status). */
static inline long plugin_rss_kib(void) {
    FILE *status = fopen("/proc/self/status", "r");
    CHECK(status != NULL, "open /proc/self/status");
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, status))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
    fclose(status);
    return kib;
}

#endif
