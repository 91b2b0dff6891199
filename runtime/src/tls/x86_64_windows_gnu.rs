//! The x86-64 Windows slot for mingw-w64 (`-gnu`), whose `thread_local!`
//! is an OS key behind a call: a `TlsAlloc` index read straight from the
//! TEB, as `TlsGetValue` does without its call (the first 64 in
//! `TlsSlots` at `gs:[0x1480]`, the rest in the `TlsExpansionSlots` block
//! `gs:[0x1780]` points to: the x64 TEB layout since XP, and wine's).
//! Writes go through `TlsSetValue`. The index is never freed.
//!
//! # Atomic orderings
//!
//! `TlsAlloc` zeroes the new slot in every thread, so the `Acquire` loads
//! of `INDEX` pair with the `AcqRel` CAS that publishes it.

use core::arch::asm;
use core::ffi::c_void;

use crate::context::ContextNode;
use crate::diag;
use crate::sync::{AtomicU32, Ordering};

const TLS_OUT_OF_INDEXES: u32 = u32::MAX;
/// `TEB::TlsSlots`: 64 pointers.
const TLS_SLOTS: usize = 0x1480;
const TLS_SLOTS_COUNT: u32 = 64;
/// `TEB::TlsExpansionSlots`: a pointer to 1024 more, or null.
const TLS_EXPANSION_SLOTS: usize = 0x1780;

#[link(name = "kernel32")]
unsafe extern "system" {
    fn TlsAlloc() -> u32;
    fn TlsFree(index: u32) -> i32;
    fn TlsSetValue(index: u32, value: *const c_void) -> i32;
}

/// The `TlsAlloc` index, or `TLS_OUT_OF_INDEXES` before it exists.
static INDEX: AtomicU32 = AtomicU32::new(TLS_OUT_OF_INDEXES);

/// Reads the pointer at `offset` in the calling thread's TEB.
///
/// # Safety
///
/// `offset` is the offset of a pointer-sized, pointer-aligned TEB field.
#[hot_path]
unsafe fn teb_read(offset: usize) -> *const c_void {
    let value: *const c_void;
    // SAFETY: on x64 Windows `gs` points to the calling thread's TEB, and
    // `offset` names a pointer field of it (caller obligation).
    unsafe {
        asm!(
            "mov {value}, gs:[{offset}]",
            value = lateout(reg) value,
            offset = in(reg) offset,
            options(nostack, readonly, preserves_flags),
        );
    }
    value
}

#[hot_path]
pub(super) fn get() -> *const ContextNode {
    // Acquire: see "Atomic orderings".
    let index = INDEX.load(Ordering::Acquire);
    if index < TLS_SLOTS_COUNT {
        // SAFETY: `TlsSlots[index]`, a pointer field of the TEB.
        return unsafe { teb_read(TLS_SLOTS + index as usize * 8) }.cast();
    }
    get_slow(index)
}

/// No index yet, or an expansion index.
#[cold]
#[inline(never)]
fn get_slow(index: u32) -> *const ContextNode {
    if index == TLS_OUT_OF_INDEXES {
        return core::ptr::null();
    }
    // SAFETY: `TlsExpansionSlots`, a pointer field of the TEB.
    let expansion = unsafe { teb_read(TLS_EXPANSION_SLOTS) }.cast::<*const ContextNode>();
    if expansion.is_null() {
        return core::ptr::null();
    }
    // SAFETY: the block has 1024 slots and `TlsAlloc` returns indexes below
    // 64 + 1024; only this thread writes its block.
    unsafe { *expansion.add((index - TLS_SLOTS_COUNT) as usize) }
}

#[hot_path]
pub(super) fn set(value: *const ContextNode) {
    // SAFETY: `index()` is a live index, never freed.
    if unsafe { TlsSetValue(index(), value.cast()) } == 0 {
        diag::abort_with("callgate: TlsSetValue failed (out of memory); aborting");
    }
}

fn index() -> u32 {
    // Acquire: see "Atomic orderings".
    match INDEX.load(Ordering::Acquire) {
        TLS_OUT_OF_INDEXES => alloc_index(),
        index => index,
    }
}

#[cold]
fn alloc_index() -> u32 {
    // SAFETY: no preconditions.
    let index = unsafe { TlsAlloc() };
    if index == TLS_OUT_OF_INDEXES {
        diag::abort_with("callgate: TlsAlloc failed (out of TLS indexes); aborting");
    }
    // AcqRel: Release publishes our index, Acquire reads a winner's.
    match INDEX.compare_exchange(
        TLS_OUT_OF_INDEXES,
        index,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => index,
        Err(winner) => {
            // SAFETY: we allocated `index` above and nobody else has seen it.
            let freed = unsafe { TlsFree(index) };
            debug_assert_ne!(freed, 0);
            winner
        }
    }
}

/// A read and a write: no signal handler runs on this thread in between
/// (APCs run only in alertable waits, never inside the runtime).
#[inline]
pub(super) fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    let found = get();
    if found == expected {
        set(value);
        Ok(())
    } else {
        Err(found)
    }
}

pub(super) use super::no_offset::*;
