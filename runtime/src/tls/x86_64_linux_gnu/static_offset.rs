//! The slot's static offset, and the init gate's fast-path word it is.
//!
//! The offset is static in two cases, checked on the code the linkers
//! produced ([`static_offset`]): the linker relaxed the descriptor
//! sequence to local-exec (the `lea` then loads the offset itself, a
//! negative number), or the resolver is glibc's `_dl_tlsdesc_return`,
//! which returns the descriptor's constant argument. Otherwise the word
//! stays 0 and every access goes through the descriptor.
//!
//! The word is recorded only while the init gate is open, so a call that
//! reads a non-zero offset skips the gate. Without a static offset,
//! `__callgate_descriptor_open` stands for the open gate instead.
//!
//! # Atomic orderings
//!
//! A non-zero word stands for the open gate, so it is read with `Acquire`
//! semantics (an x86-64 load in an `asm!` block the compiler treats as a
//! barrier), pairing with [`open_fast_gate`]'s `SeqCst` store, made after
//! its caller saw the gate open with `Acquire`. The stores are `SeqCst`
//! because their callers pair each with a check of the gate (a store then
//! a load that must not be reordered). The same holds for both words.

use core::arch::{asm, global_asm};
use core::num::NonZeroIsize;
use core::sync::atomic::AtomicIsize;

use super::{SlotAt, get_at, set_at};
use crate::context::{ContextNode, QUIET_OFFSET};

// The slot's static offset while the gate is open, else 0. Hidden, so
// read with one `rip`-relative load; at `QUIET_OFFSET` of a 128-byte line
// pair of its own (see there), as `__callgate_descriptor_open` in the next.
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

/// One of this library's hidden words, read with one `rip`-relative load,
/// with `Acquire` meaning (module docs).
macro_rules! load_hidden_word {
    ($symbol:literal) => {{
        let value: isize;
        // SAFETY: an aligned 8-byte load of this library's own word. No
        // `readonly`: later accesses must not move above it (`Acquire`).
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

/// True while the gate is open and there is no static offset.
#[hot_path]
pub(super) fn descriptor_open() -> bool {
    load_hidden_word!("__callgate_descriptor_open") != 0
}

/// The static offset, or 0 while the fast path is closed.
#[hot_path]
pub(super) fn recorded_offset() -> isize {
    load_hidden_word!("__callgate_static_offset")
}

/// The calling thread's slot at the static offset, if recorded.
#[hot_path]
pub(super) fn get_static() -> Option<*const ContextNode> {
    static_at().map(|at| get_at(&at))
}

/// The calling thread's slot at the static offset, if recorded.
#[hot_path]
pub(super) fn static_at() -> Option<SlotAt> {
    let offset = recorded_offset();
    if offset == 0 {
        // Rare but in dynamic TLS: out of the fast paths' line.
        crate::hint::rarely_taken_here!();
        return None;
    }
    // A non-zero recorded offset is the slot's in every thread.
    NonZeroIsize::new(offset).map(SlotAt)
}

/// Stores `value` at the static offset; false if it is not recorded.
#[hot_path]
pub(super) fn set_static(value: *const ContextNode) -> bool {
    static_at().map(|at| set_at(&at, value)).is_some()
}

/// One of this library's hidden words as an atomic.
macro_rules! hidden_word {
    ($symbol:literal) => {{
        let word: *mut isize;
        // SAFETY: computes an address; no access.
        unsafe {
            asm!(
                concat!("lea {word}, [rip + ", $symbol, "]"),
                word = lateout(reg) word,
                options(nostack, preserves_flags, nomem, pure),
            );
        }
        // SAFETY: an aligned 8-byte word that lives as long as the library,
        // accessed only atomically (the plain x86-64 loads of `load_hidden_word!`
        // are atomic loads).
        unsafe { AtomicIsize::from_ptr(word) }
    }};
}

#[hot_path]
fn static_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_static_offset")
}

#[hot_path]
fn descriptor_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_descriptor_open")
}

/// What the probe records when the slot has no static offset: positive,
/// so never one (an x86-64 TLS offset is negative).
const NO_STATIC_OFFSET: isize = 1;

// The opening and closing of the two words, shared with the other
// architecture.
#[path = "../static_gate.rs"]
mod gate;
pub(crate) use gate::{close_fast_gate, fast_gate_shut, open_fast_gate, static_missing};

/// The slot's offset if it is the same in every thread (module docs).
#[cold]
fn static_offset() -> Option<isize> {
    let first: usize;
    let offset: isize;
    // SAFETY: the descriptor call of `get`, keeping what the `lea` produced
    // in `rcx`; every caller-saved register is declared clobbered.
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
    // SAFETY: not relaxed, so `first` is the slot's TLS descriptor in this
    // library's GOT (the resolver and its argument), written before it ran.
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
    // One byte at a time, stopping at the first that differs: a matching
    // prefix has no `ret` yet, so the next byte is still the function's.
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

// The descriptor call for `static_offset`, on a 16-byte aligned stack.
aligned_call_function!(
    "__callgate_slot_probe",
    [
        "lea rax, [rip + __callgate_current_context@TLSDESC]",
        "mov rcx, rax",
        "call qword ptr [rax + __callgate_current_context@TLSCALL]",
    ]
);

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
