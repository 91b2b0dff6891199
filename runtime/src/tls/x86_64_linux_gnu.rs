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
//! local-exec access. `tests/hosts/plugins.rs` checks how many copies of a library
//! fit where.
//!
//! The resolver is called, so the `asm!` blocks may not use `nostack`, and
//! the call is made on a stack the runtime aligns itself: the resolver's
//! slow path calls C code (`malloc` on a thread's first access in dynamic
//! TLS) that may store vector registers to the stack with aligned moves,
//! so the stack pointer must be a multiple of 16 at the `call`, as at any
//! call. Without `nostack` Rust promises that alignment at the start of
//! the block, but rustc 1.95's LLVM does not keep it where it shrink-wraps
//! the function's prologue past the block: the cold dynamic-TLS entry of a
//! trampoline made the call with the stack 8 bytes off, and a thread whose
//! first `malloc` came from the resolver crashed there. So each block
//! checks the stack pointer first (`test spl, 15`): where it is a multiple
//! of 16, the block makes the descriptor call itself; where it is not (8
//! bytes off: the stack pointer is always a multiple of 8), it jumps to a
//! few instructions placed out of line that move the stack pointer down
//! by 8 bytes, make the call, move it back and jump back. The trampolines'
//! fast paths in dynamic TLS run the block with no frame of their own,
//! the stack 8 bytes off, and take that way on every call; cold paths
//! with a frame take the first.
//!
//! Those instructions lie in a section of their own
//! (`.text.__callgate_descriptor_call`) with unwind information of their
//! own: they are entered from code that has set up no frame (its stack
//! pointer as at its entry, 8 bytes off), so their unwind rows say the
//! return address is at the stack pointer, and 8 bytes further while the
//! stack pointer is moved. That is how the compiler lays the stack out:
//! a function that sets up a frame keeps the stack pointer a multiple of
//! 16 there (the block asks for the ABI's alignment), so only code before
//! the prologue, at the entry's alignment, finds it 8 bytes off. A
//! debugger, a profiler or an unwinder that stops inside the resolver
//! walks out through them to the trampoline's caller. `tests/hosts/unwind.rs`
//! checks both: each jump in the fixture's debug and release builds
//! against their unwind tables, and backtraces from a SIGPROF handler
//! that stopped in the resolver (without these rows every one goes
//! astray). Writing those rows into the function's own unwind
//! information instead (`.cfi_adjust_cfa_offset` in the `asm!` block)
//! does not assemble where the function has none
//! (`-C force-unwind-tables=no`). An earlier build called a small
//! assembly function that set up a frame and rounded the stack pointer
//! down: one more call and return on every call in dynamic TLS (see
//! the guide's Performance method).
//!
//! The TLSDESC convention has it preserve every register except `rax` and the
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
//!
//! # The static offset
//!
//! Even `_dl_tlsdesc_return` is a call and a return on every access. When
//! the slot is in static TLS it sits at the same offset from the thread
//! pointer in every thread, for as long as the library is loaded, so
//! [`open_fast_gate`] can record that offset in `__callgate_static_offset` (a
//! hidden word of this library), and the fast paths ([`static_at`]) and
//! [`get_static`] read the slot with two loads and no call. The offset is
//! known to be static in two cases, checked on the code the linker and
//! the dynamic linker produced:
//!
//! * the linker relaxed the descriptor sequence to local-exec (the library
//!   is linked into an executable): the `lea` then loads the offset itself,
//!   a negative number (x86-64 TLS blocks lie below the thread pointer),
//!   where a descriptor's address is a positive one;
//! * the descriptor's resolver is `mov rax, [rax + 8]; ret` (optionally
//!   after `endbr64`), which returns the descriptor's argument — a
//!   constant — for every thread; that is glibc's `_dl_tlsdesc_return`.
//!
//! Anything else (dynamic TLS, another resolver) keeps the word at 0, and
//! every call takes the descriptor path.
//!
//! Off the fast path, [`get`], [`set`] and [`claim`] use the recorded
//! offset too, and the descriptor only while none is recorded: no call
//! into the resolver, whose code and descriptor a new thread's first call
//! would otherwise fetch.
//!
//! # Dynamic TLS
//!
//! There the trampoline's read of the static word finds 0 on every call.
//! So that such a call need not look at the probe's result and the init
//! gate too (two loads through the GOT each, as the runtime's statics are
//! reached from a callback's crate), [`open_fast_gate`] sets a second hidden
//! word, `__callgate_descriptor_open`, where the probe found no static
//! offset: [`descriptor_open`] reads it with one `rip`-relative load, and a
//! non-zero value stands for the open gate as the static word does. The
//! fast paths then make the descriptor call in the trampoline, on a
//! branch laid out after their straight line ([`static_at`] marks the
//! static offset's absence rare), and continue on the fast path with the
//! slot the resolver found.
//!
//! ## Atomic orderings
//!
//! The word doubles as the init gate's fast path (see `init`): it is
//! non-zero only while the gate is open, so a call that reads a non-zero
//! offset skips the gate; so is `__callgate_descriptor_open`, and
//! everything said here of the one holds for the other.
//! [`get_static`] therefore reads it with
//! `Acquire` semantics (an x86-64 load, and an `asm!` block the compiler
//! must treat as a barrier), pairing with the `SeqCst` store of
//! [`open_fast_gate`], which its caller makes after seeing the gate open with
//! `Acquire`: what an init wrote happens before a call that reads the
//! offset. [`open_fast_gate`] and [`close_fast_gate`] are `SeqCst` because
//! their callers pair each of them with a check of the gate (a store then
//! a load that must not be reordered).

use core::arch::{asm, global_asm};
use core::num::NonZeroIsize;

use crate::context::{ContextNode, QUIET_OFFSET};
use core::sync::atomic::{AtomicIsize, Ordering};

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

// The slot's offset from the thread pointer while it is known to be the
// same in every thread and the fast path is open; 0 otherwise (the thread
// pointer itself, never a TLS variable). Hidden, so code of this library
// reads it with one `rip`-relative load, without a GOT entry. Every call
// reads it, and it is written only when the fast path opens or closes: it
// has a 128-byte line pair to itself, so that no data written more often
// (a free list's head, a user's counter) makes CPUs fetch it again. It
// sits at `QUIET_OFFSET` in that pair, an offset at which no context is
// written on a fast path: a call's stores to its context then never make
// the next call's load of this word wait (see `QUIET_OFFSET`).
//
// `__callgate_descriptor_open`, at the same offset of the next pair, is
// that word's counterpart for a slot with no static offset: non-zero only
// while the gate is open and the slot is known to be in dynamic TLS, so
// that a call which finds the static word 0 tells with one more load that
// it may go straight to the descriptor (see "Dynamic TLS" in the module
// docs).
global_asm!(
    ".pushsection .bss.__callgate_static_offset,\"aw\",@nobits",
    ".p2align 7",
    ".zero {before}",
    ".globl __callgate_static_offset",
    ".hidden __callgate_static_offset",
    ".type __callgate_static_offset,@object",
    ".size __callgate_static_offset,8",
    "__callgate_static_offset:",
    ".zero {between}",
    ".globl __callgate_descriptor_open",
    ".hidden __callgate_descriptor_open",
    ".type __callgate_descriptor_open,@object",
    ".size __callgate_descriptor_open,8",
    "__callgate_descriptor_open:",
    ".zero {after}",
    ".popsection",
    before = const QUIET_OFFSET,
    between = const 128,
    after = const 128 - QUIET_OFFSET,
);

// The descriptor call for `static_offset` (cold, from a stack of any
// alignment), on a stack aligned to 16 bytes: returns the slot's offset
// from the thread pointer in `rax`, leaves what the `lea` produced in
// `rcx`, and preserves every other register the resolver preserves
// (`rbp` is saved and restored). Hidden, so `asm!` blocks of this library
// call it directly.
aligned_call_function!(
    "__callgate_slot_probe",
    [
        "lea rax, [rip + __callgate_current_context@TLSDESC]",
        "mov rcx, rax",
        "call qword ptr [rax + __callgate_current_context@TLSCALL]",
    ]
);

/// The descriptor call of `with_slot_offset!` (module docs): made in
/// line where the stack pointer is a multiple of 16; else in a few
/// instructions out of line, in a section of their own with unwind
/// information of their own, which move the stack pointer by 8 bytes
/// around the call and jump back.
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

/// Runs `$before` (if given), the descriptor call ([`descriptor_call!`])
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
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn get() -> *const ContextNode {
    get_static().unwrap_or_else(get_described)
}

#[cfg_attr(not(callgate_unoptimized), inline(always))]
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
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn set(value: *const ContextNode) {
    if !set_static(value) {
        set_described(value);
    }
}

#[cfg_attr(not(callgate_unoptimized), inline(always))]
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

/// `cmpxchg` without `lock`: atomic with respect to signal handlers on
/// this thread (an instruction is never interrupted halfway), and no other
/// thread touches the slot. At the static offset while it is recorded (no
/// call), else through the descriptor.
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
        // `get_described`); only this thread ever accesses it.
        // The resolver leaves the slot's offset in `rax`, which `cmpxchg`
        // needs for the expected value: the offset moves to another
        // register first.
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

/// One of this library's hidden words, `$symbol`, read with one
/// `rip`-relative load and no GOT entry (an atomic load through
/// `hidden_word!` would add a `lea`). The load has `Acquire` meaning
/// (module docs).
macro_rules! load_hidden_word {
    ($symbol:literal) => {{
        let value: isize;
        // SAFETY: an aligned 8-byte load of this library's own word. No
        // `readonly`: the load has `Acquire` meaning (module docs), so
        // later memory accesses must not move above it.
        unsafe {
            asm!(
                concat!("mov {value}, qword ptr [rip + ", $symbol, "]"),
                value = lateout(reg) value,
                options(nostack, preserves_flags),
            );
        }
        value
    }};
}

/// The slot the fast paths' way (`tls::Slot::fast`): at the static offset
/// while it is recorded, else through the descriptor while
/// [`descriptor_open`]. Both stand for the open gate.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn fast_at(_gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    let at_static = static_at();
    if at_static.is_none() && descriptor_open() {
        return slot_at();
    }
    at_static
}

/// At the static offset while it is recorded, which stands for the open
/// gate.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn without_call_at(_gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    static_at()
}

/// Through the descriptor where the slot has no static offset
/// ([`static_missing`]) and the gate is open ([`descriptor_open`]) or
/// skipped.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn dynamic_at(gate_skipped: bool) -> Option<SlotAt> {
    if descriptor_open() || (gate_skipped && static_missing()) {
        slot_at()
    } else {
        None
    }
}

/// True while the gate is open and the slot is known to have no static
/// offset (`__callgate_descriptor_open`, module docs): a call that finds
/// the static word 0 can read the slot through the descriptor without
/// looking at the gate.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn descriptor_open() -> bool {
    load_hidden_word!("__callgate_descriptor_open") != 0
}

/// `__callgate_static_offset`: the slot's static offset, or 0 while the
/// fast path is closed.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn recorded_offset() -> isize {
    load_hidden_word!("__callgate_static_offset")
}

/// The calling thread's slot, read at the static offset; `None` while that
/// offset is not recorded (the fast path is closed).
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn get_static() -> Option<*const ContextNode> {
    static_at().map(|at| get_at(&at))
}

/// The calling thread's slot at the static offset (see [`SlotAt`]);
/// `None` while that offset is not recorded (the fast path is closed, or
/// the slot is in dynamic TLS).
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn static_at() -> Option<SlotAt> {
    let offset = recorded_offset();
    if offset == 0 {
        // Rare but in dynamic TLS, and marked so for the layout of the
        // fast paths, which take this branch's code out of their line.
        crate::hint::rarely_taken_here!();
        return None;
    }
    // A non-zero recorded offset is the slot's offset from the thread
    // pointer in every thread (`open_fast_gate` recorded it only then), so
    // the calling thread's too.
    NonZeroIsize::new(offset).map(SlotAt)
}

/// Stores `value` in the calling thread's slot through the static
/// offset; false (nothing stored) if the fast path is closed.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn set_static(value: *const ContextNode) -> bool {
    static_at().map(|at| set_at(&at, value)).is_some()
}

/// The slot's offset from the thread pointer for the thread that read it
/// through the descriptor ([`slot_at`]), or the static offset
/// ([`static_at`]): the slot's address on that thread for as long as the
/// library is loaded, in static or dynamic TLS (glibc never moves a
/// thread's block once it allocated it). Never 0, where the thread
/// pointer points, at the thread's control block: so an `Option` of it is
/// one register.
pub(super) struct SlotAt(NonZeroIsize);

/// The calling thread's slot through the descriptor: one call. (`None`
/// if the resolver returned 0, which no TLS variable's offset is.)
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn slot_at() -> Option<SlotAt> {
    let offset: isize;
    // SAFETY: the descriptor sequence alone: its resolver returns the
    // slot's offset from the thread pointer for the calling thread
    // (allocating the block on a thread's first access in dynamic TLS).
    // The stack is usable (no `nostack`), the flags and every clobbered
    // register are declared; no memory of the program is written. `rax`
    // is kept (saved in the output's register, which then takes the
    // offset in exchange), so that a fast path that joins this one keeps
    // its values in `rax` too: a callback's return value, there, on the
    // fast path that reads the slot at the static offset.
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
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn get_at(at: &SlotAt) -> *const ContextNode {
    // SAFETY: `at` holds the slot's offset for the thread that made it,
    // which its owner (`tls::ThreadSlot`, neither `Send` nor `Sync`) is.
    unsafe { read_at(at.0.get()) }
}

/// [`clear_top_bit_at`] at `at` (see [`SlotAt`]): whatever the slot holds
/// then, not only `_seen`.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn untag_at(at: &SlotAt, _seen: *const ContextNode) -> Option<*const ContextNode> {
    // SAFETY: as in `get_at`.
    unsafe { clear_top_bit_at(at.0.get()) }
}

/// Stores `value` in the slot at `at` (see [`SlotAt`]).
#[cfg_attr(not(callgate_unoptimized), inline(always))]
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
#[cfg_attr(not(callgate_unoptimized), inline(always))]
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

/// Clears the top bit of the calling thread's slot at `offset`, with `btr`
/// without `lock`: one instruction, so atomic with respect to signal
/// handlers on this thread (see [`claim`]), and cheaper than `cmpxchg`.
/// Returns the slot's new value if the bit was set; `None` if it was clear
/// (nothing changed).
///
/// # Safety
///
/// As for [`read_at`].
#[cfg_attr(not(callgate_unoptimized), inline(always))]
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
#[cfg_attr(not(callgate_unoptimized), inline(always))]
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

/// One of this library's hidden words, `$symbol`, as an atomic: its
/// address in one `lea`.
macro_rules! hidden_word {
    ($symbol:literal) => {{
        let word: *mut isize;
        // SAFETY: computes the address of this library's own word; no
        // access.
        unsafe {
            asm!(
                concat!("lea {word}, [rip + ", $symbol, "]"),
                word = lateout(reg) word,
                options(nostack, preserves_flags, nomem, pure),
            );
        }
        // SAFETY: an aligned 8-byte word that lives as long as the
        // library, and is accessed only atomically: through these views,
        // and by the plain x86-64 loads of `recorded_offset` and
        // `descriptor_open`, which are what atomic loads are.
        unsafe { AtomicIsize::from_ptr(word) }
    }};
}

/// `__callgate_static_offset` as an atomic.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn static_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_static_offset")
}

/// `__callgate_descriptor_open` as an atomic.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn descriptor_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_descriptor_open")
}

/// What [`static_offset`] found, once it ran: the offset, or
/// [`NO_STATIC_OFFSET`]. 0 before. (A library's TLS stays where the
/// dynamic linker put it while the library is loaded.)
static PROBED: AtomicIsize = AtomicIsize::new(0);

/// `PROBED` when the slot has no static offset: positive, so never one.
const NO_STATIC_OFFSET: isize = 1;

/// Records the slot's static offset, if it has one: [`get_static`] reads
/// it from now on. Else opens the descriptor's way ([`descriptor_open`]).
#[cold]
pub(super) fn open_fast_gate() {
    // Relaxed: the probe's result is the same whichever thread computes
    // it, and publishes nothing else.
    let mut offset = PROBED.load(Ordering::Relaxed);
    if offset == 0 {
        offset = static_offset().unwrap_or(NO_STATIC_OFFSET);
        PROBED.store(offset, Ordering::Relaxed);
    }
    // SeqCst: see "Atomic orderings" in the module docs.
    if offset == NO_STATIC_OFFSET {
        descriptor_word().store(1, Ordering::SeqCst);
    } else {
        static_word().store(offset, Ordering::SeqCst);
    }
}

/// True when [`open_fast_gate`] has something to do: both words are 0.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(super) fn fast_gate_shut() -> bool {
    // Relaxed: a hint; `open_fast_gate` decides under `SeqCst`.
    static_word().load(Ordering::Relaxed) == 0 && descriptor_word().load(Ordering::Relaxed) == 0
}

/// True once the probe found that the slot has no static offset (it is in
/// dynamic TLS, or the resolver is another one): every access goes
/// through the descriptor for as long as the library is loaded.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn static_missing() -> bool {
    // Relaxed: a hint, as in `fast_gate_shut`; the probe's result does not
    // change while the library is loaded, and a caller that reads 0 here
    // takes the slow path, which probes.
    PROBED.load(Ordering::Relaxed) == NO_STATIC_OFFSET
}

/// Forgets the static offset and closes the descriptor's way: every call
/// looks at the gate.
#[cold]
pub(super) fn close_fast_gate() {
    // SeqCst: see "Atomic orderings" in the module docs.
    static_word().store(0, Ordering::SeqCst);
    descriptor_word().store(0, Ordering::SeqCst);
}

/// The slot's offset from the thread pointer if it is the same in every
/// thread (module docs), else `None`.
#[cold]
fn static_offset() -> Option<isize> {
    let first: usize;
    let offset: isize;
    // SAFETY: the descriptor call of `get`, keeping what the `lea`
    // produced in `rcx` (`__callgate_slot_probe`, module docs). Cold: every
    // caller-saved register is declared clobbered.
    unsafe {
        asm!(
            "call __callgate_slot_probe",
            out("rcx") first,
            out("rax") offset,
            clobber_abi("C"),
        );
    }
    if first as isize == offset {
        // Relaxed to local-exec: the `lea` became a load of the offset.
        return Some(offset);
    }
    if offset >= 0 {
        return None;
    }
    let descriptor = core::ptr::with_exposed_provenance::<[usize; 2]>(first);
    // SAFETY: not relaxed, so `first` is the address of the slot's TLS
    // descriptor in this library's GOT: two words, the resolver and its
    // argument, written by the dynamic linker before the library ran.
    let [resolver, argument] = unsafe { descriptor.read() };
    // SAFETY: `resolver` is the code the descriptor call just ran.
    let returns_argument = unsafe { returns_argument(resolver) };
    (returns_argument && argument as isize == offset).then_some(offset)
}

/// True when the code at `code` is `[endbr64] mov rax, [rax + 8]; ret`.
///
/// # Safety
///
/// `code` is the address of a function's code, mapped readable.
unsafe fn returns_argument(code: usize) -> bool {
    const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
    const RETURN_ARGUMENT: [u8; 5] = [0x48, 0x8b, 0x40, 0x08, 0xc3];
    let code = core::ptr::with_exposed_provenance::<u8>(code);
    // Reads one byte at a time and stops at the first that differs: every
    // byte read follows a matching prefix, which is not a complete function
    // yet (no `ret`), so it is part of the function's code.
    let matches = |at: *const u8, pattern: &[u8]| {
        pattern.iter().enumerate().all(|(i, &byte)| {
            // SAFETY: see above; `at + i` is within the function.
            unsafe { at.add(i).read_volatile() == byte }
        })
    };
    if matches(code, &RETURN_ARGUMENT) {
        return true;
    }
    // SAFETY: the four bytes matched `endbr64`, so the function goes on.
    matches(code, &ENDBR64) && matches(unsafe { code.add(ENDBR64.len()) }, &RETURN_ARGUMENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a test executable the linker relaxes the descriptor sequence to
    /// local-exec, so the probe finds a static offset, and reading at it
    /// gives what the descriptor path gives.
    #[test]
    fn the_static_offset_reads_the_slot() {
        let offset = static_offset().expect("an executable's TLS is static");
        assert!(offset < 0, "x86-64 TLS lies below the thread pointer");
        let marker = core::ptr::without_provenance::<ContextNode>(0x1000);
        set(marker);
        open_fast_gate();
        assert_eq!(get_static(), Some(marker));
        std::thread::spawn(move || {
            // Same offset, this thread's own slot.
            assert_eq!(get_static(), Some(core::ptr::null()));
        })
        .join()
        .unwrap();
        close_fast_gate();
        assert_eq!(get_static(), None);
        set(core::ptr::null());
    }

    /// The fast path's word sits at `QUIET_OFFSET` of a 128-byte line pair
    /// that holds no other data: neither this module's other word nor the
    /// free list's head, which threads write, sits in it.
    #[test]
    fn the_static_offset_word_has_its_line_pair_to_itself() {
        let word = core::ptr::from_ref(static_word()).addr();
        assert_eq!(word % 128, QUIET_OFFSET);
        let pair = word - QUIET_OFFSET;
        let apart = |other: usize, size: usize| other + size <= pair || other >= pair + 128;
        assert!(apart(core::ptr::from_ref(&PROBED).addr(), 8));
        let contexts = core::ptr::from_ref(&crate::context::CONTEXTS);
        assert!(apart(
            contexts.addr(),
            core::mem::size_of_val(&crate::context::CONTEXTS)
        ));
    }

    #[test]
    fn only_the_return_argument_resolver_is_recognised() {
        let plain: [u8; 5] = [0x48, 0x8b, 0x40, 0x08, 0xc3];
        let cet: [u8; 9] = [0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x40, 0x08, 0xc3];
        let other: [u8; 5] = [0x48, 0x8b, 0x40, 0x10, 0xc3];
        // SAFETY: each array is readable for its whole length, and the
        // check stops at the first byte that differs.
        unsafe {
            assert!(returns_argument(plain.as_ptr().expose_provenance()));
            assert!(returns_argument(cet.as_ptr().expose_provenance()));
            assert!(!returns_argument(other.as_ptr().expose_provenance()));
        }
    }
}
