/* Counts the calls of malloc made with the stack misaligned for a call
 * (x86-64: rsp + 8 a multiple of 16 on entry). A thread's first access to
 * a library's block of dynamic TLS goes through the TLS descriptor's
 * resolver, which allocates the block with the program's malloc: a library
 * that calls the resolver with the stack 8 bytes off shows up here on
 * every such access, where glibc's code would crash only when it happens
 * to store vector registers to the stack (a thread's first malloc, which
 * sets up its arena, does).
 *
 * It replaces malloc for the whole program (the dynamic linker looks malloc
 * up in the executable first) and forwards to glibc's __libc_malloc. Not
 * with a sanitizer, whose runtime has a malloc of its own. Include it in
 * one file of a program, after a system header (it tests __GLIBC__). */
#ifndef CALLGATE_MALLOC_CHECK_H
#define CALLGATE_MALLOC_CHECK_H

#if defined(__x86_64__) && defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
long malloc_check_misaligned;
__asm__(".text\n"
        ".globl malloc\n"
        ".type malloc, @function\n"
        "malloc:\n"
        "    testq $8, %rsp\n"
        "    jnz 1f\n"
        "    lock incq malloc_check_misaligned(%rip)\n"
        "1:  jmp __libc_malloc@PLT\n"
        ".size malloc, .-malloc\n");

/* How many calls of malloc found the stack misaligned so far. */
static inline long malloc_misaligned(void) {
    return __atomic_load_n(&malloc_check_misaligned, __ATOMIC_RELAXED);
}
#define MALLOC_CHECKED 1
#else
static inline long malloc_misaligned(void) { return 0; }
#define MALLOC_CHECKED 0
#endif

#endif
