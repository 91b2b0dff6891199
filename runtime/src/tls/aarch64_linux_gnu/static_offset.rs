//! The slot's static offset, and the init gate's fast-path word it is: as
//! on x86-64 (`x86_64_linux_gnu/static_offset.rs`, whose module docs give
//! the design), with aarch64's instructions.
//!
//! The offset is known to be static in two cases ([`static_offset`]):
//!
//! * the linker relaxed the descriptor sequence (the library is linked into
//!   an executable): `x0` holds the offset before the call, which became a
//!   `nop`, where it held the descriptor's address;
//! * the descriptor's resolver is `[bti c] ldr x0, [x0, #8]; ret`, glibc's
//!   `_dl_tlsdesc_return`, which returns the descriptor's argument, a
//!   constant, for every thread.
//!
//! aarch64 TLS blocks lie above the thread pointer (past the thread's
//! 16-byte control block), so a static offset is positive.
//!
//! # Atomic orderings
//!
//! A non-zero word stands for the open gate, so it is read with `Acquire`
//! (`ldar`; a plain load would let the callback's reads of what an init
//! wrote move above it), pairing with the `SeqCst` store of
//! [`open_fast_gate`], which its caller makes after seeing the gate open
//! with `Acquire`. The stores of [`open_fast_gate`] and [`close_fast_gate`]
//! are `SeqCst` because their callers pair each of them with a check of
//! the gate (a store then a load that must not be reordered). All of this
//! holds for both words.

use core::arch::{asm, global_asm};
use core::num::NonZeroIsize;
use core::sync::atomic::{AtomicIsize, Ordering};

use super::SlotAt;

// The slot's offset from the thread pointer while it is known to be the
// same in every thread and the gate is open; 0 otherwise (the thread
// pointer itself, never a TLS variable). Hidden, so code of this library
// reaches it with `adrp` and `add`, without a GOT entry. Every call reads
// it and almost nothing writes it: it has a 128-byte line pair to itself,
// as `__callgate_descriptor_open` has the next one.
global_asm!(
    ".pushsection .bss.__callgate_static_offset,\"aw\",%nobits",
    ".p2align 7",
    ".globl __callgate_static_offset",
    ".hidden __callgate_static_offset",
    ".type __callgate_static_offset,%object",
    ".size __callgate_static_offset,8",
    "__callgate_static_offset:",
    ".zero 128",
    ".globl __callgate_descriptor_open",
    ".hidden __callgate_descriptor_open",
    ".type __callgate_descriptor_open,%object",
    ".size __callgate_descriptor_open,8",
    "__callgate_descriptor_open:",
    ".zero 128",
    ".popsection",
);

/// One of this library's hidden words, `$symbol`, as an atomic: its
/// address in `adrp` and `add`.
macro_rules! hidden_word {
    ($symbol:literal) => {{
        let word: *mut isize;
        // SAFETY: computes the address of this library's own word; no
        // access.
        unsafe {
            asm!(
                concat!("adrp {word}, ", $symbol),
                concat!("add {word}, {word}, :lo12:", $symbol),
                word = lateout(reg) word,
                options(nostack, preserves_flags, nomem, pure),
            );
        }
        // SAFETY: an aligned 8-byte word that lives as long as the
        // library, and is accessed only through these atomic views.
        unsafe { AtomicIsize::from_ptr(word) }
    }};
}

/// `__callgate_static_offset` as an atomic.
#[hot_path]
fn static_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_static_offset")
}

/// `__callgate_descriptor_open` as an atomic.
#[hot_path]
fn descriptor_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_descriptor_open")
}

/// True while the gate is open and the slot is known to have no static
/// offset (`__callgate_descriptor_open`): a call that finds the static
/// word 0 can read the slot through the descriptor without looking at the
/// gate.
#[hot_path]
pub(super) fn descriptor_open() -> bool {
    // Acquire: see "Atomic orderings".
    descriptor_word().load(Ordering::Acquire) != 0
}

/// `__callgate_static_offset`: the slot's static offset, or 0 while the
/// fast path is closed.
#[hot_path]
pub(super) fn recorded_offset() -> isize {
    // Acquire: see "Atomic orderings".
    static_word().load(Ordering::Acquire)
}

/// The calling thread's slot at the static offset (see [`SlotAt`]);
/// `None` while that offset is not recorded (the fast path is closed, or
/// the slot is in dynamic TLS).
#[hot_path]
pub(super) fn static_at() -> Option<SlotAt> {
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

/// What the probe records when the slot has no static offset: negative,
/// so never one (an aarch64 TLS offset is positive).
const NO_STATIC_OFFSET: isize = -1;

// The opening and closing of the two words, shared with the other
// architecture.
#[path = "../static_gate.rs"]
mod gate;
pub(crate) use gate::{close_fast_gate, fast_gate_shut, open_fast_gate, static_missing};

/// The slot's offset from the thread pointer if it is the same in every
/// thread (module docs), else `None`.
#[cold]
fn static_offset() -> Option<isize> {
    let before_call: usize;
    let offset: isize;
    // SAFETY: the descriptor call of `get`, keeping what `x0` held before
    // the call in `x20`, which the C convention preserves. Cold: every
    // register a C call may clobber is declared so.
    unsafe {
        asm!(
            descriptor_sequence!("mov x20, x0"),
            out("x20") before_call,
            out("x0") offset,
            clobber_abi("C"),
        );
    }
    if before_call as isize == offset {
        // Relaxed: the sequence became a load of the offset.
        return (offset > 0).then_some(offset);
    }
    if offset <= 0 {
        return None;
    }
    let descriptor = core::ptr::with_exposed_provenance::<[usize; 2]>(before_call);
    // SAFETY: not relaxed, so `before_call` is the address of the slot's
    // TLS descriptor in this library's GOT: two words, the resolver and
    // its argument, written by the dynamic linker before the library ran.
    let [resolver, argument] = unsafe { descriptor.read() };
    // SAFETY: `resolver` is the code the descriptor call just ran.
    let returns_argument = unsafe { returns_argument(resolver) };
    (returns_argument && argument as isize == offset).then_some(offset)
}

/// True when the code at `code` is `[bti c] ldr x0, [x0, #8]; ret`.
///
/// # Safety
///
/// `code` is the address of a function's code, mapped readable.
unsafe fn returns_argument(code: usize) -> bool {
    const BTI_C: u32 = 0xd503_245f;
    const RETURN_ARGUMENT: [u32; 2] = [0xf940_0400, 0xd65f_03c0];
    let code = core::ptr::with_exposed_provenance::<u32>(code);
    // Reads one instruction at a time and stops at the first that differs:
    // every one read follows a matching prefix, which is not a complete
    // function yet (no `ret`), so it is part of the function's code.
    let matches = |at: *const u32, pattern: &[u32]| {
        pattern.iter().enumerate().all(|(i, &instruction)| {
            // SAFETY: see above; `at + i` is within the function, and
            // instructions are 4-byte aligned.
            u32::from_le(unsafe { at.add(i).read_volatile() }) == instruction
        })
    };
    if matches(code, &RETURN_ARGUMENT) {
        return true;
    }
    // SAFETY: the first instruction matched `bti c`, so the function goes
    // on.
    matches(code, &[BTI_C]) && matches(unsafe { code.add(1) }, &RETURN_ARGUMENT)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
