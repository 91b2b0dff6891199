//! The slot on x86-64 glibc Linux: a TLS symbol read through a TLS
//! descriptor.
//!
//! In a `cdylib` or `dlopen`ed library, `thread_local!` uses the
//! general-dynamic TLS model: every access calls `__tls_get_addr`. Stable
//! Rust cannot choose a TLS model, so here the slot is an 8-byte `.tbss`
//! symbol defined in assembly and read with the x86-64 TLS-descriptor
//! sequence (`@tlsdesc` / `@tlscall`):
//!
//! ```text
//! lea  rax, [rip + slot@TLSDESC]     ; the descriptor in the GOT
//! call qword ptr [rax + slot@TLSCALL] ; its resolver: rax = slot - %fs base
//! mov  rax, qword ptr fs:[rax]
//! ```
//!
//! Unlike the initial-exec model, a descriptor does not mark the library
//! `STATIC_TLS`, so `dlopen` never fails for lack of static TLS. glibc places
//! the library's TLS block in its static TLS reserve while room is left —
//! the resolver is then `_dl_tlsdesc_return`, two instructions — and in
//! dynamic TLS otherwise, where the resolver (`_dl_tlsdesc_dynamic`) looks
//! the block up in the thread's DTV: a few more instructions, and on a
//! thread's first access a call into the dynamic linker that allocates the
//! block. In an executable the linker relaxes the sequence to a
//! local-exec access. `tests/plugins.rs` checks how many copies of a library
//! fit where.
//!
//! The resolver is called, so the `asm!` blocks may not use `nostack`. The
//! TLSDESC convention has it preserve every register except `rax` and the
//! flags, but glibc's `_dl_tlsdesc_dynamic` before the fix for
//! [BZ #31372](https://sourceware.org/bugzilla/show_bug.cgi?id=31372)
//! (glibc 2.40; glibc 2.36 as Debian 12 ships it is affected) saves only
//! the integer registers around its slow path, a call into C code that may
//! `malloc` and `memset` with vector instructions. So the blocks declare the
//! vector, x87 and MMX registers clobbered (and the AVX-512 ones when the
//! crate is built with AVX-512 enabled): this costs a spill only where a
//! floating-point value is live across the access — the argument registers
//! of a callback with `f64` parameters — and never a general register.
//! Build with `--cfg callgate_portable_tls` to use `thread_local!` instead.

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

/// Runs the descriptor sequence that leaves the slot's offset from the
/// thread pointer in `rax`, followed by `$access`, with the operands
/// `$($operand)*`, the options `$($option)*` and every register the resolver may clobber declared.
macro_rules! with_slot_offset {
    ($access:literal, [$($operand:tt)*], [$($option:tt)*]) => {
        #[cfg(not(target_feature = "avx512f"))]
        asm!(
            "lea rax, [rip + __callgate_current_context@TLSDESC]",
            "call qword ptr [rax + __callgate_current_context@TLSCALL]",
            $access,
            $($operand)*
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            out("mm0") _, out("mm1") _, out("mm2") _, out("mm3") _,
            out("mm4") _, out("mm5") _, out("mm6") _, out("mm7") _,
            options($($option)*),
        );
        #[cfg(target_feature = "avx512f")]
        asm!(
            "lea rax, [rip + __callgate_current_context@TLSDESC]",
            "call qword ptr [rax + __callgate_current_context@TLSCALL]",
            $access,
            $($operand)*
            out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
            out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
            out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _,
            out("zmm12") _, out("zmm13") _, out("zmm14") _, out("zmm15") _,
            out("zmm16") _, out("zmm17") _, out("zmm18") _, out("zmm19") _,
            out("zmm20") _, out("zmm21") _, out("zmm22") _, out("zmm23") _,
            out("zmm24") _, out("zmm25") _, out("zmm26") _, out("zmm27") _,
            out("zmm28") _, out("zmm29") _, out("zmm30") _, out("zmm31") _,
            out("k1") _, out("k2") _, out("k3") _, out("k4") _,
            out("k5") _, out("k6") _, out("k7") _,
            out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
            out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
            out("mm0") _, out("mm1") _, out("mm2") _, out("mm3") _,
            out("mm4") _, out("mm5") _, out("mm6") _, out("mm7") _,
            options($($option)*),
        );
    };
}

#[inline(always)]
pub(super) fn get() -> *const ContextNode {
    let value: *const ContextNode;
    // SAFETY: reads this thread's 8-byte slot: the descriptor's resolver
    // returns the slot's offset from the thread pointer (`%fs` base) for
    // the calling thread, allocating the block on a thread's first access
    // in dynamic TLS. The stack is usable (no `nostack`), the flags and
    // every clobbered register are declared; nothing else is written.
    unsafe {
        with_slot_offset!(
            "mov rax, qword ptr fs:[rax]",
            [out("rax") value,],
            [readonly]
        );
    }
    value
}

#[inline(always)]
pub(super) fn set(value: *const ContextNode) {
    // SAFETY: writes this thread's slot (see `get`); only this thread
    // ever accesses it. `value` is an input in a register other than
    // `rax`, which the sequence uses.
    unsafe {
        with_slot_offset!(
            "mov qword ptr fs:[rax], {value}",
            [value = in(reg) value, out("rax") _,],
            []
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
    // The resolver leaves the slot's offset in `rax`, which `cmpxchg` needs
    // for the expected value: the offset moves to another register first.
    unsafe {
        with_slot_offset!(
            "mov {offset}, rax\n\
             mov rax, {expected}\n\
             cmpxchg qword ptr fs:[{offset}], {value}",
            [
                offset = out(reg) _,
                expected = in(reg) expected,
                value = in(reg) value,
                out("rax") found,
            ],
            []
        );
    }
    if found == expected {
        Ok(())
    } else {
        Err(found)
    }
}
