//! The slot on aarch64 glibc Linux: a TLS symbol read through a TLS
//! descriptor, or at its static offset from the thread pointer
//! (`tpidr_el0`) once that is known. The reasons are x86-64's
//! (`x86_64_linux_gnu.rs`): `thread_local!` in a `cdylib` calls the
//! descriptor on every access, and a descriptor, unlike the initial-exec
//! model, never makes `dlopen` fail for lack of static TLS.
//!
//! ```text
//! adrp x0, :tlsdesc:slot
//! ldr  x1, [x0, :tlsdesc_lo12:slot]
//! add  x0, x0, :tlsdesc_lo12:slot
//! blr  x1                          // the resolver: x0 = slot - tpidr_el0
//! mrs  x8, tpidr_el0
//! ldr  x0, [x8, x0]
//! ```
//!
//! # The descriptor call
//!
//! aarch64 keeps the stack pointer a multiple of 16, so the call needs no
//! realignment; but `blr` overwrites the return address in `x30`, which the
//! function must have saved first: a frame. So no fast path makes it. The
//! trampolines read the slot at the static offset only ([`fast_at`]), and a
//! call that finds none goes out of line (`boundary::slow::call_cold`),
//! where [`dynamic_at`] reaches the slot through the descriptor once. The
//! compiler saves `x30` there, with the unwind rows of an ordinary call.
//!
//! The descriptor convention has the resolver preserve every register but
//! `x0`, `x30` and the flags, and glibc's resolvers do: the dynamic one
//! saves the integer and the 128-bit vector registers before it calls C
//! code (`__tls_get_addr`, `malloc`). So the blocks declare `x0`, `x1`
//! (which the sequence loads) and `x30` clobbered, as the compiler's own
//! descriptor calls do; where the crate is built with SVE, whose wider
//! registers the resolver does not save, every register a C call may
//! clobber.
//!
//! # The static offset
//!
//! As on x86-64: where the slot sits at the same offset from the thread
//! pointer in every thread, that offset is recorded, and a fast path reads
//! the slot with one acquire load of the offset, `mrs` and a load, and no
//! call; the offset's word is the init gate's fast-path word
//! (`static_offset.rs`). [`get`], [`set`] and [`claim`] use it too, and the
//! descriptor only while none is recorded.
//!
//! Build with `--cfg callgate_portable_tls` to use `thread_local!` instead.

use core::arch::{asm, global_asm};
use core::num::NonZeroIsize;

use crate::context::ContextNode;

// One pointer-sized, zero-initialised (null) slot per thread. Hidden, so
// every shared object that contains this runtime has its own slot.
global_asm!(
    ".pushsection .tbss,\"awT\",%nobits",
    ".p2align 3",
    ".globl __callgate_current_context",
    ".hidden __callgate_current_context",
    ".type __callgate_current_context,%object",
    ".size __callgate_current_context,8",
    "__callgate_current_context:",
    ".zero 8",
    ".popsection",
);

/// The descriptor sequence (module docs), leaving the slot's offset from
/// the thread pointer in `x0`, with `$before_call` between the `add` and
/// the call: in an executable the linker turns the first three
/// instructions into a load of the offset itself and the call into a
/// `nop`, so `x0` holds the offset there already.
macro_rules! descriptor_sequence {
    ($($before_call:literal)?) => {
        concat!(
            "adrp x0, :tlsdesc:__callgate_current_context\n",
            "ldr x1, [x0, :tlsdesc_lo12:__callgate_current_context]\n",
            "add x0, x0, :tlsdesc_lo12:__callgate_current_context\n",
            $($before_call, "\n",)?
            ".tlsdesccall __callgate_current_context\n",
            "blr x1",
        )
    };
}

// After `descriptor_sequence!`, which it uses.
#[path = "aarch64_linux_gnu/static_offset.rs"]
mod static_offset;

pub(super) use static_offset::{close_fast_gate, fast_gate_shut, open_fast_gate};
use static_offset::{descriptor_open, recorded_offset, static_at, static_missing};

/// The calling thread's slot's offset from the thread pointer, through the
/// descriptor: one call.
#[hot_path]
fn described_offset() -> isize {
    let offset: isize;
    // SAFETY: the descriptor sequence alone: its resolver returns the
    // slot's offset for the calling thread, allocating the block on a
    // thread's first access in dynamic TLS. The stack is usable (no
    // `nostack`), the flags and every register the call may clobber are
    // declared (module docs); no memory of the program is written.
    unsafe {
        #[cfg(not(target_feature = "sve"))]
        asm!(
            descriptor_sequence!(),
            out("x0") offset,
            out("x1") _,
            out("x30") _,
            options(readonly),
        );
        #[cfg(target_feature = "sve")]
        asm!(
            descriptor_sequence!(),
            out("x0") offset,
            clobber_abi("C"),
            options(readonly),
        );
    }
    offset
}

/// At the static offset while it is recorded (no call), else through the
/// descriptor.
#[hot_path]
pub(super) fn get() -> *const ContextNode {
    match static_at() {
        Some(at) => get_at(&at),
        // SAFETY: the offset the descriptor returned on this thread.
        None => unsafe { read_at(described_offset()) },
    }
}

/// At the static offset while it is recorded, else through the descriptor.
#[hot_path]
pub(super) fn set(value: *const ContextNode) {
    match static_at() {
        Some(at) => set_at(&at, value),
        // SAFETY: the offset the descriptor returned on this thread.
        None => unsafe { write_at(described_offset(), value) },
    }
}

/// A compare-and-swap without barriers, at the static offset while it is
/// recorded (no call), else through the descriptor: see
/// [`compare_exchange_at`].
#[inline]
pub(super) fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    let mut offset = recorded_offset();
    if offset == 0 {
        offset = described_offset();
    }
    // SAFETY: a non-zero recorded offset is the slot's in every thread (see
    // `static_at`); otherwise the descriptor returned it on this thread.
    unsafe { compare_exchange_at(offset, expected, value) }
}

/// The slot the fast paths' way (`tls::Slot::fast`): at the static offset
/// while it is recorded, which stands for the open gate; `None` in dynamic
/// TLS too, where the call goes out of line (module docs).
#[hot_path]
pub(super) fn fast_at(_gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    static_at()
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
        NonZeroIsize::new(described_offset()).map(SlotAt)
    } else {
        None
    }
}

/// The slot's offset from the thread pointer for the thread that read it
/// through the descriptor ([`dynamic_at`]), or the static offset
/// ([`static_at`]): the slot's address on that thread for as long as the
/// library is loaded (glibc never moves a thread's block once it allocated
/// it). Never 0, where the thread pointer points, at the thread's control
/// block: so an `Option` of it is one register.
pub(super) struct SlotAt(NonZeroIsize);

/// The slot at `at` (see [`SlotAt`]).
#[hot_path]
pub(super) fn get_at(at: &SlotAt) -> *const ContextNode {
    // SAFETY: `at` holds the slot's offset for the thread that made it,
    // which its owner (`tls::Slot`, neither `Send` nor `Sync`) is.
    unsafe { read_at(at.0.get()) }
}

/// Stores `value` in the slot at `at` (see [`SlotAt`]).
#[hot_path]
pub(super) fn set_at(at: &SlotAt, value: *const ContextNode) {
    // SAFETY: as in `get_at`.
    unsafe { write_at(at.0.get(), value) }
}

/// Clears the top bit of the slot at `at` if it holds `seen` (see
/// [`SlotAt`]): the untagged value, or `None` if the bit was clear or the
/// slot no longer holds `seen`.
#[hot_path]
pub(super) fn untag_at(at: &SlotAt, seen: *const ContextNode) -> Option<*const ContextNode> {
    const TOP_BIT: usize = 1 << (usize::BITS - 1);
    if seen.addr() & TOP_BIT == 0 {
        return None;
    }
    let untagged = seen.map_addr(|address| address & !TOP_BIT);
    // SAFETY: as in `get_at`.
    unsafe { compare_exchange_at(at.0.get(), seen, untagged) }.ok()?;
    Some(untagged)
}

/// The thread pointer, `tpidr_el0`: the same value for as long as the
/// calling thread runs, so the compiler may read it once for several
/// accesses.
#[hot_path]
fn thread_pointer() -> usize {
    let pointer: usize;
    // SAFETY: reads a system register that user code may read; no memory,
    // no stack, no flags.
    unsafe {
        asm!(
            "mrs {pointer}, tpidr_el0",
            pointer = lateout(reg) pointer,
            options(nostack, preserves_flags, nomem, pure),
        );
    }
    pointer
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
            "ldr {value}, [{pointer}, {offset}]",
            pointer = in(reg) thread_pointer(),
            offset = in(reg) offset,
            value = lateout(reg) value,
            options(nostack, preserves_flags, readonly),
        );
    }
    value
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
            "str {value}, [{pointer}, {offset}]",
            pointer = in(reg) thread_pointer(),
            offset = in(reg) offset,
            value = in(reg) value,
            options(nostack, preserves_flags),
        );
    }
}

/// Stores `value` in the calling thread's slot at `offset` if it holds
/// `expected`; otherwise returns what it holds. A load-exclusive and
/// store-exclusive pair: a signal handler that runs in between clears the
/// exclusive monitor (an exception return does), so the store fails and
/// the loop reads what the handler left. No barrier: no other thread
/// touches the slot. (The compiler's compare-and-swap is a call here, to
/// the helper that picks the instructions the CPU has.)
///
/// # Safety
///
/// As for [`read_at`].
#[hot_path]
unsafe fn compare_exchange_at(
    offset: isize,
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    let found: *const ContextNode;
    // SAFETY: `offset` is the calling thread's slot (caller obligation),
    // which only this thread (and its signal handlers) accesses.
    unsafe {
        asm!(
            "add {address}, {pointer}, {offset}",
            "2:",
            "ldxr {found}, [{address}]",
            "cmp {found}, {expected}",
            "b.ne 3f",
            "stxr {failed:w}, {value}, [{address}]",
            "cbnz {failed:w}, 2b",
            "b 4f",
            "3:",
            "clrex",
            "4:",
            pointer = in(reg) thread_pointer(),
            offset = in(reg) offset,
            expected = in(reg) expected,
            value = in(reg) value,
            address = out(reg) _,
            found = out(reg) found,
            failed = out(reg) _,
            options(nostack),
        );
    }
    if found == expected {
        Ok(())
    } else {
        Err(found)
    }
}
