//! Happens-before annotations for helgrind, and memcheck's "defined" mark
//! for the words `stack` reads on purpose in frames that are gone.
//!
//! helgrind does not model atomics, so it would report a context recycled
//! through the free list, and what a `Closure`'s turns guard, as raced.
//! These are valgrind's client requests, written as `valgrind.h`'s magic
//! instruction sequence: natively it does nothing, so it stays compiled
//! in, off the fast paths.

/// `_VG_USERREQ__HG_USERSO_SEND_PRE` (helgrind.h).
#[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
const USERSO_SEND_PRE: usize = 0x4847_0121;
/// `_VG_USERREQ__HG_USERSO_RECV_POST` (helgrind.h).
#[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
const USERSO_RECV_POST: usize = 0x4847_0122;

/// `VG_USERREQ__RUNNING_ON_VALGRIND` (valgrind.h): 0 natively.
#[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
const RUNNING_ON_VALGRIND: usize = 0x1001;

/// `VG_USERREQ__MAKE_MEM_DEFINED` (memcheck.h: tool base `'M','C'`, + 2).
#[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
const MAKE_MEM_DEFINED: usize = 0x4D43_0002;

/// Tells memcheck that the `len` bytes at `address` are defined: `stack`
/// reads anchor words of frames that may be gone, only to compare them.
#[inline]
pub(crate) fn mark_defined(address: usize, len: usize) {
    #[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
    client_request(MAKE_MEM_DEFINED, address, len);
    #[cfg(not(all(target_arch = "x86_64", not(callgate_loom), not(miri))))]
    let _ = (address, len);
}

/// Everything this thread did so far happens before what a thread does
/// after [`happens_after`] with the same `tag`.
#[inline]
pub(crate) fn happens_before<T>(tag: *const T) {
    #[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
    client_request(USERSO_SEND_PRE, tag.addr(), 0);
    #[cfg(not(all(target_arch = "x86_64", not(callgate_loom), not(miri))))]
    let _ = tag;
}

/// See [`happens_before`].
#[inline]
pub(crate) fn happens_after<T>(tag: *const T) {
    #[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
    client_request(USERSO_RECV_POST, tag.addr(), 0);
    #[cfg(not(all(target_arch = "x86_64", not(callgate_loom), not(miri))))]
    let _ = tag;
}

/// Whether the process runs under valgrind, for what is decided once.
pub(crate) fn running() -> bool {
    #[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
    return client_request(RUNNING_ON_VALGRIND, 0, 0) != 0;
    #[cfg(not(all(target_arch = "x86_64", not(callgate_loom), not(miri))))]
    false
}

/// Valgrind's client request `request`; its answer (0 natively).
#[cfg(all(target_arch = "x86_64", not(callgate_loom), not(miri)))]
#[inline]
fn client_request(request: usize, first: usize, second: usize) -> usize {
    let arguments: [usize; 6] = [request, first, second, 0, 0, 0];
    let answer;
    // SAFETY: valgrind.h's amd64 preamble: rotations of %rdi by 128 bits in
    // all (declared clobbered) and `xchg rbx, rbx`, which change nothing
    // natively (%rdx keeps its 0). Under valgrind it reads the six words at
    // %rax, which outlive the asm (no `nomem`), and answers in %rdx.
    unsafe {
        core::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") arguments.as_ptr(),
            inout("rdx") 0usize => answer,
            out("rdi") _,
            options(nostack),
        );
    }
    answer
}
