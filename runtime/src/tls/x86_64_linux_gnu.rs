//! The slot on x86-64 glibc Linux: a TLS symbol read through a TLS
//! descriptor, or at its static offset from the thread pointer.
//!
//! Stable Rust cannot choose a TLS model, and `thread_local!` in a shared
//! library calls `__tls_get_addr` on every access, so the slot is an
//! 8-byte `.tbss` symbol defined in assembly and read with the x86-64
//! TLS-descriptor sequence:
//!
//! ```text
//! lea  rax, [rip + slot@TLSDESC]     ; the descriptor in the GOT
//! call qword ptr [rax + slot@TLSCALL] ; its resolver: rax = slot - %fs base
//! mov  rax, qword ptr fs:[rax]
//! ```
//!
//! Unlike initial-exec, a descriptor does not mark the library
//! `STATIC_TLS`, so `dlopen` never fails for lack of static TLS; in dynamic
//! TLS the resolver looks the block up, and allocates it on first access.
//!
//! # The descriptor call
//!
//! The resolver may call C code (`malloc`) that needs the stack aligned to
//! 16 bytes, which the compiler does not keep where it moves a prologue
//! past the `asm!` block. So each block checks the stack pointer
//! (`descriptor_call!`) and, 8 bytes off, calls from a few instructions
//! out of line with unwind rows of their own (`tests/hosts/unwind.rs`).
//!
//! glibc's dynamic-TLS resolver before 2.40
//! ([BZ #31372](https://sourceware.org/bugzilla/show_bug.cgi?id=31372))
//! saves only the integer registers around C code, so the blocks declare
//! the vector, x87 and MMX registers (and AVX-512 where enabled) clobbered.
//!
//! # The static offset
//!
//! Where the slot sits at the same offset from the thread pointer in every
//! thread, that offset is recorded and the fast paths read the slot with
//! two loads and no call; the same word is the init gate's fast-path word
//! (`static_offset.rs`). `--cfg callgate_portable_tls` uses `thread_local!`.

use core::arch::{asm, global_asm};
use core::num::NonZeroIsize;

use crate::context::ContextNode;

#[path = "x86_64_linux_gnu/static_offset.rs"]
mod static_offset;

pub(super) use static_offset::{close_fast_gate, fast_gate_shut, open_fast_gate};
use static_offset::{
    descriptor_open, get_static, recorded_offset, set_static, static_at, static_missing,
};

// The slot, null until set. Hidden: each copy of the runtime has its own.
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

/// The descriptor call of `with_slot_offset!` (module docs).
macro_rules! descriptor_call {
    () => {
        concat!(
            "test spl, 15\n",
            "jnz 2f\n",
            "lea rax, [rip + __callgate_current_context@TLSDESC]\n",
            "call qword ptr [rax + __callgate_current_context@TLSCALL]\n",
            "3:\n",
            ".pushsection .text.__callgate_descriptor_call,\"ax\",@progbits\n",
            ".cfi_startproc\n",
            "2:\n",
            "sub rsp, 8\n",
            ".cfi_adjust_cfa_offset 8\n",
            "lea rax, [rip + __callgate_current_context@TLSDESC]\n",
            "call qword ptr [rax + __callgate_current_context@TLSCALL]\n",
            "add rsp, 8\n",
            ".cfi_adjust_cfa_offset -8\n",
            "jmp 3b\n",
            ".cfi_endproc\n",
            ".popsection",
        )
    };
}

/// Runs `$before` (if given), the descriptor call, which leaves the slot's
/// offset in `rax`, and `$access`, declaring every register the resolver
/// may clobber.
macro_rules! with_slot_offset {
    ($access:literal, [$($operand:tt)*], [$($option:tt)*]) => {
        with_slot_offset!("", $access, [$($operand)*], [$($option)*])
    };
    ($before:literal, $access:literal, [$($operand:tt)*], [$($option:tt)*]) => {
        #[cfg(not(target_feature = "avx512f"))]
        asm!(
            $before,
            descriptor_call!(),
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
            $before,
            descriptor_call!(),
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

/// At the static offset while it is recorded, else through the descriptor.
#[hot_path]
pub(super) fn get() -> *const ContextNode {
    get_static().unwrap_or_else(get_described)
}

#[hot_path]
fn get_described() -> *const ContextNode {
    let value: *const ContextNode;
    // SAFETY: reads this thread's 8-byte slot at the offset the resolver
    // returns for the calling thread. The stack is usable (no `nostack`);
    // the flags and every clobbered register are declared.
    unsafe {
        with_slot_offset!(
            "mov rax, qword ptr fs:[rax]",
            [out("rax") value,],
            [readonly]
        );
    }
    value
}

/// As `get`.
#[hot_path]
pub(super) fn set(value: *const ContextNode) {
    if !set_static(value) {
        set_described(value);
    }
}

#[hot_path]
fn set_described(value: *const ContextNode) {
    // SAFETY: writes this thread's slot (see `get_described`), which only
    // this thread accesses; `value` is in a register other than `rax`.
    unsafe {
        with_slot_offset!(
            "mov qword ptr fs:[rax], {value}",
            [value = in(reg) value, out("rax") _,],
            []
        );
    }
}

/// `cmpxchg` without `lock`, as in `tls/portable.rs`.
#[inline]
pub(super) fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    let offset = recorded_offset();
    let found: *const ContextNode;
    if offset != 0 {
        // SAFETY: a non-zero offset is the slot's in every thread: this
        // compares and writes the calling thread's slot, which only it accesses.
        unsafe {
            asm!(
                "cmpxchg qword ptr fs:[{offset}], {value}",
                offset = in(reg) offset,
                value = in(reg) value,
                inout("rax") expected => found,
                options(nostack),
            );
        }
    } else {
        // SAFETY: as in `set_described`. The offset leaves `rax`, which
        // `cmpxchg` needs for `expected`.
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
    }
    if found == expected {
        Ok(())
    } else {
        Err(found)
    }
}

/// The slot the fast paths' way: at the static offset, else through the
/// descriptor while [`descriptor_open`]. Both stand for the open gate.
#[hot_path]
pub(super) fn fast_at(_gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    let at_static = static_at();
    if at_static.is_none() && descriptor_open() {
        return slot_at();
    }
    at_static
}

/// At the static offset, which stands for the open gate.
#[hot_path]
pub(super) fn without_call_at(_gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    static_at()
}

/// Through the descriptor where there is no static offset and the gate is
/// open ([`descriptor_open`]) or skipped.
#[hot_path]
pub(super) fn dynamic_at(gate_skipped: bool) -> Option<SlotAt> {
    if descriptor_open() || (gate_skipped && static_missing()) {
        slot_at()
    } else {
        None
    }
}

/// The slot's offset from the thread pointer, for the thread that got it;
/// valid while the library is loaded (glibc never moves a thread's block).
/// Never 0, where the thread's control block is.
pub(super) struct SlotAt(NonZeroIsize);

/// The calling thread's slot through the descriptor: one call.
#[hot_path]
fn slot_at() -> Option<SlotAt> {
    let offset: isize;
    // SAFETY: the descriptor sequence alone (see `get_described`); nothing
    // is written. `rax` is kept (swapped with the output), so a fast path
    // joining this one keeps its values there.
    unsafe {
        with_slot_offset!(
            "mov {offset}, rax",
            "xchg rax, {offset}",
            [offset = out(reg) offset,],
            [readonly]
        );
    }
    NonZeroIsize::new(offset).map(SlotAt)
}

#[hot_path]
pub(super) fn get_at(at: &SlotAt) -> *const ContextNode {
    // SAFETY: `at` holds the slot's offset for the thread that made it,
    // which owns the `tls::Slot` (neither `Send` nor `Sync`).
    unsafe { read_at(at.0.get()) }
}

/// [`clear_top_bit_at`], whatever the slot holds then.
#[hot_path]
pub(super) fn untag_at(at: &SlotAt, _seen: *const ContextNode) -> Option<*const ContextNode> {
    // SAFETY: as in `get_at`.
    unsafe { clear_top_bit_at(at.0.get()) }
}

#[hot_path]
pub(super) fn set_at(at: &SlotAt, value: *const ContextNode) {
    // SAFETY: as in `get_at`.
    unsafe { write_at(at.0.get(), value) }
}

/// Reads the calling thread's slot at `offset`.
///
/// # Safety
///
/// `offset` is the calling thread's slot's offset: the recorded static
/// offset, or one the descriptor returned on this thread.
#[hot_path]
unsafe fn read_at(offset: isize) -> *const ContextNode {
    let value: *const ContextNode;
    // SAFETY: the calling thread's 8-byte slot (caller obligation).
    unsafe {
        asm!(
            "mov {value}, qword ptr fs:[{offset}]",
            offset = in(reg) offset,
            value = lateout(reg) value,
            options(nostack, preserves_flags, readonly),
        );
    }
    value
}

/// Clears the slot's top bit with `btr` without `lock`, as [`claim`]; the
/// new value if it was set.
///
/// # Safety
///
/// As for [`read_at`].
#[hot_path]
unsafe fn clear_top_bit_at(offset: isize) -> Option<*const ContextNode> {
    let was_set: u8;
    let value: *const ContextNode;
    // SAFETY: the calling thread's slot (caller obligation), which only it
    // accesses.
    unsafe {
        asm!(
            "btr qword ptr fs:[{offset}], 63",
            "setc {was_set}",
            "mov {value}, qword ptr fs:[{offset}]",
            offset = in(reg) offset,
            // Written before `offset`'s last use: `out`, not `lateout`.
            was_set = out(reg_byte) was_set,
            value = lateout(reg) value,
            options(nostack),
        );
    }
    (was_set != 0).then_some(value)
}

/// Stores `value` in the calling thread's slot at `offset`.
///
/// # Safety
///
/// As for [`read_at`].
#[hot_path]
unsafe fn write_at(offset: isize, value: *const ContextNode) {
    // SAFETY: the calling thread's slot (caller obligation), which only it
    // accesses.
    unsafe {
        asm!(
            "mov qword ptr fs:[{offset}], {value}",
            offset = in(reg) offset,
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}
