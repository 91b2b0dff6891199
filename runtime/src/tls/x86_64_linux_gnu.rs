//! The slot on x86-64 glibc Linux: a TLS symbol read through a TLS
//! descriptor, or at its static offset from the thread pointer once that
//! is known.
//!
//! In a `cdylib` or `dlopen`ed library, `thread_local!` uses the
//! general-dynamic TLS model: every access calls `__tls_get_addr`. Stable
//! Rust cannot choose a TLS model, so the slot is an 8-byte `.tbss` symbol
//! defined in assembly and read with the x86-64 TLS-descriptor sequence:
//!
//! ```text
//! lea  rax, [rip + slot@TLSDESC]     ; the descriptor in the GOT
//! call qword ptr [rax + slot@TLSCALL] ; its resolver: rax = slot - %fs base
//! mov  rax, qword ptr fs:[rax]
//! ```
//!
//! Unlike the initial-exec model, a descriptor does not mark the library
//! `STATIC_TLS`, so `dlopen` never fails for lack of static TLS. glibc
//! puts the library's TLS block in its static TLS reserve while room is
//! left, and in dynamic TLS otherwise, where the resolver looks the block
//! up and allocates it on a thread's first access.
//!
//! # The descriptor call
//!
//! The resolver may call C code (`malloc`) that needs the stack aligned to
//! 16 bytes, which the compiler does not keep where it moves a prologue
//! past the `asm!` block. So each block checks the stack pointer
//! (`descriptor_call!`): aligned, it calls in line; 8 bytes off, it jumps
//! to a few instructions out of line that move it down, call and jump
//! back. Those have unwind rows of their own, so an unwinder stopped in
//! the resolver walks out to the trampoline's caller
//! (`tests/hosts/unwind.rs`).
//!
//! The resolver should preserve every register but `rax` and the flags,
//! but glibc's dynamic-TLS resolver before 2.40
//! ([BZ #31372](https://sourceware.org/bugzilla/show_bug.cgi?id=31372))
//! saves only the integer registers around C code. So the blocks declare
//! the vector, x87 and MMX registers (and AVX-512 where enabled) clobbered.
//!
//! # The static offset
//!
//! Where the slot sits at the same offset from the thread pointer in every
//! thread, that offset is recorded and the fast paths read the slot with
//! two loads and no call; the same word is the init gate's fast-path word
//! (`static_offset.rs`). [`get`], [`set`] and [`claim`] use it too.
//!
//! Build with `--cfg callgate_portable_tls` to use `thread_local!` instead.

use core::arch::{asm, global_asm};
use core::num::NonZeroIsize;

use crate::context::ContextNode;

#[path = "x86_64_linux_gnu/static_offset.rs"]
mod static_offset;

pub(super) use static_offset::{close_fast_gate, fast_gate_shut, open_fast_gate};
use static_offset::{
    descriptor_open, get_static, recorded_offset, set_static, static_at, static_missing,
};

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

/// The descriptor call of `with_slot_offset!`, on a 16-byte aligned stack
/// (module docs).
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

/// Runs `$before` (if given), the descriptor call (`descriptor_call!`)
/// that leaves the slot's offset from the thread pointer in `rax`,
/// and `$access`, with the operands `$($operand)*`, the options
/// `$($option)*` and every register the resolver may clobber declared.
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

/// At the static offset while it is recorded (no call), else through the
/// descriptor.
#[hot_path]
pub(super) fn get() -> *const ContextNode {
    get_static().unwrap_or_else(get_described)
}

#[hot_path]
fn get_described() -> *const ContextNode {
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

/// At the static offset while it is recorded, else through the descriptor.
#[hot_path]
pub(super) fn set(value: *const ContextNode) {
    if !set_static(value) {
        set_described(value);
    }
}

#[hot_path]
fn set_described(value: *const ContextNode) {
    // SAFETY: writes this thread's slot (see `get_described`); only this thread
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

/// `cmpxchg` without `lock`, as in `tls/portable.rs`. At the static
/// offset while it is recorded, else through the descriptor.
#[inline]
pub(super) fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    let offset = recorded_offset();
    let found: *const ContextNode;
    if offset != 0 {
        // SAFETY: a non-zero offset is the slot's in every thread (see
        // `get_static`): this compares and writes the calling thread's
        // slot, which only this thread accesses.
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
        // SAFETY: compares and writes this thread's slot (see
        // `get_described`); only this thread ever accesses it. The offset
        // leaves `rax`, which `cmpxchg` needs for `expected`.
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

/// The slot the fast paths' way (`tls::Slot::fast`): at the static offset
/// while it is recorded, else through the descriptor while
/// [`descriptor_open`]. Both stand for the open gate.
#[hot_path]
pub(super) fn fast_at(_gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    let at_static = static_at();
    if at_static.is_none() && descriptor_open() {
        return slot_at();
    }
    at_static
}

/// At the static offset while it is recorded, which stands for the open
/// gate.
#[hot_path]
pub(super) fn without_call_at(_gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    static_at()
}

/// Through the descriptor where the slot has no static offset
/// ([`static_missing`]) and the gate is open ([`descriptor_open`]) or
/// skipped.
#[hot_path]
pub(super) fn dynamic_at(gate_skipped: bool) -> Option<SlotAt> {
    if descriptor_open() || (gate_skipped && static_missing()) {
        slot_at()
    } else {
        None
    }
}

/// The slot's offset from the thread pointer for the thread that read it
/// through the descriptor ([`slot_at`]), or the static offset
/// ([`static_at`]); valid while the library is loaded (glibc never moves a
/// thread's block). Never 0: the thread pointer points at the thread's
/// control block.
pub(super) struct SlotAt(NonZeroIsize);

/// The calling thread's slot through the descriptor: one call. (`None`
/// if the resolver returned 0, which no TLS variable's offset is.)
#[hot_path]
fn slot_at() -> Option<SlotAt> {
    let offset: isize;
    // SAFETY: the descriptor sequence alone (see `get_described`); no
    // memory of the program is written. `rax` is kept (swapped with the
    // output), so a fast path joining this one keeps its values there.
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

/// The slot at `at` (see [`SlotAt`]).
#[hot_path]
pub(super) fn get_at(at: &SlotAt) -> *const ContextNode {
    // SAFETY: `at` holds the slot's offset for the thread that made it,
    // which its owner (`tls::ThreadSlot`, neither `Send` nor `Sync`) is.
    unsafe { read_at(at.0.get()) }
}

/// [`clear_top_bit_at`] at `at` (see [`SlotAt`]): whatever the slot holds
/// then, not only `_seen`.
#[hot_path]
pub(super) fn untag_at(at: &SlotAt, _seen: *const ContextNode) -> Option<*const ContextNode> {
    // SAFETY: as in `get_at`.
    unsafe { clear_top_bit_at(at.0.get()) }
}

/// Stores `value` in the slot at `at` (see [`SlotAt`]).
#[hot_path]
pub(super) fn set_at(at: &SlotAt, value: *const ContextNode) {
    // SAFETY: as in `get_at`.
    unsafe { write_at(at.0.get(), value) }
}

/// Reads the calling thread's slot at `offset` from the thread pointer.
///
/// # Safety
///
/// `offset` is the calling thread's slot's offset: the recorded static
/// offset, or one the descriptor returned on this thread.
#[hot_path]
unsafe fn read_at(offset: isize) -> *const ContextNode {
    let value: *const ContextNode;
    // SAFETY: `offset` is the calling thread's 8-byte slot (caller
    // obligation).
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

/// Clears the top bit of the calling thread's slot at `offset` with `btr`
/// without `lock`, as [`claim`]. Returns the slot's new value if the bit
/// was set; `None` if it was clear.
///
/// # Safety
///
/// As for [`read_at`].
#[hot_path]
unsafe fn clear_top_bit_at(offset: isize) -> Option<*const ContextNode> {
    let was_set: u8;
    let value: *const ContextNode;
    // SAFETY: `offset` is the calling thread's slot (caller obligation),
    // which only this thread accesses.
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
    // SAFETY: `offset` is the calling thread's slot (caller obligation),
    // which only this thread accesses.
    unsafe {
        asm!(
            "mov qword ptr fs:[{offset}], {value}",
            offset = in(reg) offset,
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}
