//! The slot on x86-64 glibc Linux: an initial-exec TLS symbol.
//!
//! In a `cdylib` or `dlopen`ed library, `thread_local!` uses the
//! general-dynamic TLS model: every access calls `__tls_get_addr`. Stable
//! Rust cannot choose a TLS model, so here the slot is an 8-byte `.tbss`
//! symbol defined in assembly and read with the initial-exec sequence —
//! load its offset from the GOT, then read through `%fs` — two instructions
//! and no call. The cost: a library using it takes 8 bytes of glibc's static
//! TLS surplus when loaded with `dlopen` (glibc reserves surplus for such
//! libraries; exhausting it makes `dlopen` fail with "cannot allocate memory
//! in static TLS block"). Build with `--cfg callgate_portable_tls` to use
//! `thread_local!` instead.

use core::arch::{asm, global_asm};

use crate::context::ContextNode;

// One pointer-sized, zero-initialised (null) slot per thread. Hidden, so
// every shared object that contains this runtime has its own slot.
global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 3",
    ".globl __callgate_current_context",
    ".hidden __callgate_current_context",
    ".type __callgate_current_context,@object",
    ".size __callgate_current_context,8",
    "__callgate_current_context:",
    ".zero 8",
    ".popsection",
);

#[inline(always)]
pub(super) fn get() -> *const ContextNode {
    let value: *const ContextNode;
    // SAFETY: reads this thread's 8-byte slot: the GOT entry holds the
    // slot's offset from the thread pointer (`%fs` base), which the
    // dynamic linker set up for every thread, including threads created
    // before the library was loaded (static TLS is allocated with the
    // thread). No stack use, flags preserved, nothing written.
    unsafe {
        asm!(
            "mov {value}, qword ptr [rip + __callgate_current_context@GOTTPOFF]",
            "mov {value}, qword ptr fs:[{value}]",
            value = out(reg) value,
            options(nostack, preserves_flags, readonly, pure),
        );
    }
    value
}

#[inline(always)]
pub(super) fn set(value: *const ContextNode) {
    // SAFETY: writes this thread's slot (see `get`); only this thread
    // ever accesses it.
    unsafe {
        asm!(
            "mov {offset}, qword ptr [rip + __callgate_current_context@GOTTPOFF]",
            "mov qword ptr fs:[{offset}], {value}",
            offset = out(reg) _,
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}

/// `cmpxchg` without `lock`: atomic with respect to signal handlers on
/// this thread (an instruction is never interrupted halfway), and no other
/// thread touches the slot.
#[inline]
pub(super) fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    let found: *const ContextNode;
    // SAFETY: compares and writes this thread's slot (see `get`); only this
    // thread ever accesses it.
    unsafe {
        asm!(
            "mov {offset}, qword ptr [rip + __callgate_current_context@GOTTPOFF]",
            "cmpxchg qword ptr fs:[{offset}], {value}",
            offset = out(reg) _,
            value = in(reg) value,
            inout("rax") expected => found,
            options(nostack),
        );
    }
    if found == expected {
        Ok(())
    } else {
        Err(found)
    }
}
