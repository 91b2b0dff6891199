/* The least a thread's first callback does, in C (see `bench_c_bind` in
 * bench.h), as definitions for the file that includes this one, which
 * names the function by defining C_BIND_FUNCTION first: bench.c, whose
 * thread-local slot is in the benchmark's static TLS, and tls_read.c,
 * whose slot is in the block of a library in dynamic TLS. Each includer
 * has its own slot, list and key. Needs <pthread.h>, <stdatomic.h>,
 * <stdint.h> and <stdlib.h>. */
#ifndef C_BIND_FUNCTION
#error "define C_BIND_FUNCTION, the name of the function, before including c_bind.h"
#endif

typedef struct c_context {
    struct c_context *next;
    int64_t depth;
    int64_t calls;
    int64_t binds;
} c_context;

static _Thread_local c_context *c_slot;
static _Atomic(c_context *) c_free;
static pthread_key_t c_key;
static pthread_once_t c_key_once = PTHREAD_ONCE_INIT;

static void c_release(void *raw) {
    c_context *context = raw;
    c_slot = NULL;
    c_context *head = atomic_load_explicit(&c_free, memory_order_relaxed);
    do {
        context->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&c_free, &head, context,
                                                    memory_order_release,
                                                    memory_order_relaxed));
}

static void c_create_key(void) {
    if (pthread_key_create(&c_key, c_release) != 0) abort();
}

/* Pops without an ABA tag: only the benchmark's threads use the list, one
 * at a time. */
__attribute__((noinline, cold)) static c_context *c_attach(void) {
    pthread_once(&c_key_once, c_create_key);
    c_context *head = atomic_load_explicit(&c_free, memory_order_acquire);
    while (head != NULL &&
           !atomic_compare_exchange_weak_explicit(&c_free, &head, head->next,
                                                  memory_order_acquire,
                                                  memory_order_acquire)) {
    }
    if (head == NULL && (head = calloc(1, sizeof *head)) == NULL) abort();
    head->depth = 0;
    head->binds++;
    if (pthread_setspecific(c_key, head) != 0) abort();
    c_slot = head;
    return head;
}

int32_t C_BIND_FUNCTION(int32_t x) {
    c_context *context = c_slot;
    if (__builtin_expect(context == NULL, 0)) context = c_attach();
    context->depth++;
    context->calls++;
    int32_t result = x + 1;
    context->depth--;
    return result;
}
