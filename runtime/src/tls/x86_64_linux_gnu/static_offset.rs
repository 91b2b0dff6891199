//! The slot's static offset, and the init gate's fast-path word it is.
//!
//! The offset is known to be static in two cases, checked on the code the
//! linker and the dynamic linker produced ([`static_offset`]):
//!
//! * the linker relaxed the descriptor sequence to local-exec (an
//!   executable): the `lea` then loads the offset itself, a negative
//!   number, where a descriptor's address is positive;
//! * the resolver is glibc's `_dl_tlsdesc_return`
//!   (`[endbr64] mov rax, [rax + 8]; ret`), which returns the descriptor's
//!   constant argument.
//!
//! Anything else leaves the word at 0, and every access goes through the
//! descriptor.
//!
//! The word is recorded only while the init gate is open ([`open_fast_gate`],
//! [`close_fast_gate`]), so a call that reads a non-zero offset skips the
//! gate. Where there is no static offset, a second word,
//! `__callgate_descriptor_open`, stands for the open gate instead.
//!
//! # Atomic orderings
//!
//! A non-zero word stands for the open gate, so it is read with `Acquire`
//! semantics (an x86-64 load, in an `asm!` block the compiler must treat
//! as a barrier), pairing with the `SeqCst` store of [`open_fast_gate`],
//! which its caller makes after seeing the gate open with `Acquire`: what
//! an init wrote happens before a call that reads the word. The stores of
//! [`open_fast_gate`] and [`close_fast_gate`] are `SeqCst` because their
//! callers pair each of them with a check of the gate (a store then a load
//! that must not be reordered). All of this holds for both words.

use core::arch::{asm, global_asm};
use core::num::NonZeroIsize;
use core::sync::atomic::{AtomicIsize, Ordering};

use super::{SlotAt, get_at, set_at};
use crate::context::{ContextNode, QUIET_OFFSET};

// The slot's static offset while the gate is open, else 0 (never a TLS
// variable's). Hidden, so read with one `rip`-relative load. Every call
// reads it: it has a 128-byte line pair to itself, at `QUIET_OFFSET` (see
// there); `__callgate_descriptor_open` sits likewise in the next pair.
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

/// One of this library's hidden words, `$symbol`, read with one
/// `rip`-relative load (through `hidden_word!` it would take a `lea` more),
/// with `Acquire` meaning (module docs).
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

/// True while the gate is open and the slot is known to have no static
/// offset (`__callgate_descriptor_open`, module docs).
#[hot_path]
pub(super) fn descriptor_open() -> bool {
    load_hidden_word!("__callgate_descriptor_open") != 0
}

/// `__callgate_static_offset`: the slot's static offset, or 0 while the
/// fast path is closed.
#[hot_path]
pub(super) fn recorded_offset() -> isize {
    load_hidden_word!("__callgate_static_offset")
}

/// The calling thread's slot, read at the static offset; `None` while that
/// offset is not recorded (the fast path is closed).
#[hot_path]
pub(super) fn get_static() -> Option<*const ContextNode> {
    static_at().map(|at| get_at(&at))
}

/// The calling thread's slot at the static offset (see [`SlotAt`]);
/// `None` while that offset is not recorded (the fast path is closed, or
/// the slot is in dynamic TLS).
#[hot_path]
pub(super) fn static_at() -> Option<SlotAt> {
    let offset = recorded_offset();
    if offset == 0 {
        // Rare but in dynamic TLS: kept out of the fast paths' line.
        crate::hint::rarely_taken_here!();
        return None;
    }
    // A non-zero recorded offset is the slot's in every thread.
    NonZeroIsize::new(offset).map(SlotAt)
}

/// Stores `value` in the calling thread's slot through the static
/// offset; false (nothing stored) if the fast path is closed.
#[hot_path]
pub(super) fn set_static(value: *const ContextNode) -> bool {
    static_at().map(|at| set_at(&at, value)).is_some()
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
#[hot_path]
fn static_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_static_offset")
}

/// `__callgate_descriptor_open` as an atomic.
#[hot_path]
fn descriptor_word() -> &'static AtomicIsize {
    hidden_word!("__callgate_descriptor_open")
}

/// What [`static_offset`] found, once it ran: the offset, or
/// [`NO_STATIC_OFFSET`]. 0 before.
static PROBED: AtomicIsize = AtomicIsize::new(0);

/// `PROBED` when the slot has no static offset: positive, so never one.
const NO_STATIC_OFFSET: isize = 1;

/// Records the slot's static offset, if it has one: [`get_static`] reads
/// it from now on. Else opens the descriptor's way ([`descriptor_open`]).
#[cold]
pub(crate) fn open_fast_gate() {
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
#[hot_path]
pub(crate) fn fast_gate_shut() -> bool {
    // Relaxed: a hint; `open_fast_gate` decides under `SeqCst`.
    static_word().load(Ordering::Relaxed) == 0 && descriptor_word().load(Ordering::Relaxed) == 0
}

/// True once the probe found that the slot has no static offset (it is in
/// dynamic TLS, or the resolver is another one): every access goes
/// through the descriptor for as long as the library is loaded.
#[hot_path]
pub(super) fn static_missing() -> bool {
    // Relaxed: a hint, as in `fast_gate_shut`; a caller that reads 0 here
    // takes the slow path, which probes.
    PROBED.load(Ordering::Relaxed) == NO_STATIC_OFFSET
}

/// Forgets the static offset and closes the descriptor's way: every call
/// looks at the gate.
#[cold]
pub(crate) fn close_fast_gate() {
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

// The descriptor call for `static_offset`, on a 16-byte aligned stack:
// the slot's offset in `rax`, what the `lea` produced in `rcx`.
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
