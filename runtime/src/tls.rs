//! The thread's slot: one pointer per thread that says which context serves
//! it ([`thread`](crate::thread) gives the values their meaning).
//!
//! The slot has no destructor, so it can be read and written at any point of
//! thread teardown, pthread key destructors included. Only `thread` writes
//! it, and only `thread` dereferences what it reads.
//!
//! Three ways in, whatever the target:
//!
//! - [`get`], [`set`] and [`claim`]: the slot, reached anew on each access
//!   (the slow paths);
//! - [`Slot`]: the slot as a fast path reached it, read and written again
//!   without reaching it anew;
//! - [`FastGate`]: the word that stands for the init gate where the target
//!   folds the gate into the fast path's reach of the slot.
//!
//! How the slot is reached depends on the target:
//!
//! * x86-64 glibc Linux: a TLS symbol read through a TLS descriptor, or at
//!   its static offset from the thread pointer once that is known
//!   (`tls/x86_64_linux_gnu.rs`);
//! * aarch64 glibc Linux: the same, from `tpidr_el0`; a slot in dynamic
//!   TLS is reached out of line (`tls/aarch64_linux_gnu.rs`);
//! * x86-64 Windows with mingw-w64 (`-gnu`), whose `thread_local!` is an
//!   OS key behind a call: a `TlsAlloc` slot read from the TEB
//!   (`tls/x86_64_windows_gnu.rs`);
//! * elsewhere, or with `--cfg callgate_portable_tls`: a `thread_local!`
//!   (`tls/portable.rs`).

use core::marker::PhantomData;

use crate::context::ContextNode;

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(callgate_portable_tls)
))]
#[path = "tls/x86_64_linux_gnu.rs"]
mod imp;

#[cfg(all(
    target_arch = "x86_64",
    windows,
    target_env = "gnu",
    not(callgate_portable_tls)
))]
#[path = "tls/x86_64_windows_gnu.rs"]
mod imp;

#[cfg(all(
    target_arch = "aarch64",
    target_os = "linux",
    target_env = "gnu",
    not(callgate_portable_tls)
))]
#[path = "tls/aarch64_linux_gnu.rs"]
mod imp;

#[cfg(not(all(
    any(
        all(target_arch = "x86_64", any(target_os = "linux", windows)),
        all(target_arch = "aarch64", target_os = "linux"),
    ),
    target_env = "gnu",
    not(callgate_portable_tls)
)))]
#[path = "tls/portable.rs"]
mod imp;

/// [`Slot`] and [`FastGate`] where the slot has no offset from the thread
/// pointer to keep (the portable and the Windows slot re-export these).
#[cfg(not(all(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    target_os = "linux",
    target_env = "gnu",
    not(callgate_portable_tls)
)))]
#[path = "tls/no_offset.rs"]
mod no_offset;

/// The calling thread's slot: null until the thread stores something.
#[hot_path]
pub(crate) fn get() -> *const ContextNode {
    imp::get()
}

/// Stores `value` in the calling thread's slot.
///
/// # Safety
///
/// `value` is null, the `EXITED` marker of `thread`, a node of
/// `CONTEXTS` that serves the calling thread, or one cached for it (tagged
/// by `thread`): `thread` dereferences every other value it reads.
#[hot_path]
pub(crate) unsafe fn set(value: *const ContextNode) {
    imp::set(value);
}

/// Stores `value` in the calling thread's slot if it still holds
/// `expected`; otherwise returns what it holds. One instruction where the
/// target allows it, so a signal handler that binds the thread in between
/// cannot be overwritten.
///
/// # Safety
///
/// As for [`set`].
#[inline]
pub(crate) unsafe fn claim(
    expected: *const ContextNode,
    value: *const ContextNode,
) -> Result<(), *const ContextNode> {
    imp::claim(expected, value)
}

/// The calling thread's slot as a fast path reached it: reads and writes
/// through it do not reach the slot again (on glibc Linux, no call into
/// the TLS descriptor's resolver). Tied to the thread that reached it
/// (neither `Send` nor `Sync`), whose slot stays where it is for as long
/// as the library is loaded.
///
/// Each way to reach it takes `gate_open`, the init gate's check: the
/// slot is reached only past the open gate. Where the target has a
/// [`FastGate`], the gate is folded into the reach, and `gate_open` is
/// never called.
pub(crate) struct Slot {
    at: imp::SlotAt,
    _thread: PhantomData<*const ()>,
}

impl Slot {
    /// The slot the fast paths' way: at its static offset (no call), or
    /// through the descriptor (one call) where the slot is in dynamic TLS
    /// (x86-64; on aarch64 that call needs a frame, so `None`); or, where
    /// the target has no such offset, at no cost. `None` while the gate is
    /// not known to be open: the fast path is closed.
    #[hot_path]
    pub(crate) fn fast(gate_open: impl FnOnce() -> bool) -> Option<Slot> {
        imp::fast_at(gate_open).map(Slot::new)
    }

    /// As [`fast`](Slot::fast), but never with a call: `None` also where
    /// the slot is in dynamic TLS.
    #[hot_path]
    pub(crate) fn without_call(gate_open: impl FnOnce() -> bool) -> Option<Slot> {
        imp::without_call_at(gate_open).map(Slot::new)
    }

    /// The slot through the descriptor (one call) where it is known to be
    /// in dynamic TLS and the gate is open, or skipped (`gate_skipped`);
    /// `None` otherwise, and always on other targets. For a cold path that
    /// would otherwise reach the slot through the descriptor on each of
    /// its accesses.
    #[hot_path]
    pub(crate) fn dynamic(gate_skipped: bool) -> Option<Slot> {
        imp::dynamic_at(gate_skipped).map(Slot::new)
    }

    #[hot_path]
    fn new(at: imp::SlotAt) -> Slot {
        Slot {
            at,
            _thread: PhantomData,
        }
    }

    /// The slot's value (as [`get`]).
    #[hot_path]
    pub(crate) fn get(&self) -> *const ContextNode {
        imp::get_at(&self.at)
    }

    /// [`set`] through this slot.
    ///
    /// # Safety
    ///
    /// As for [`set`].
    #[hot_path]
    pub(crate) unsafe fn set(&self, value: *const ContextNode) {
        imp::set_at(&self.at, value);
    }

    /// Clears the top bit of the slot, which held `seen` when the caller
    /// read it, so that a signal handler on this thread sees the slot
    /// before or after, never in between; returns the slot's new value.
    /// `None` (nothing changed) if the bit was clear, or, where the target
    /// clears it with a compare-and-swap from `seen`, if the slot no longer
    /// holds `seen`.
    ///
    /// # Safety
    ///
    /// Every slot value with its top bit set is, with that bit cleared, a
    /// value the caller may [`set`] at this point.
    #[hot_path]
    pub(crate) unsafe fn untag(&self, seen: *const ContextNode) -> Option<*const ContextNode> {
        imp::untag_at(&self.at, seen)
    }
}

/// The init gate's fast-path word, where the target folds the gate into
/// [`Slot::fast`]'s reach of the slot: open only while the gate is open,
/// so that a call which reaches the slot through it skips the gate. On
/// glibc Linux (x86-64, aarch64) it is the slot's recorded static offset
/// (or, where the slot is in dynamic TLS, a word that says so). Elsewhere
/// the fast path reads the gate itself: there is no such word, and these
/// do nothing.
///
/// `init` keeps it closed whenever the gate may be: see
/// `init::open_fast_path` for the order of the checks.
pub(crate) struct FastGate;

impl FastGate {
    /// Opens the word. The caller has seen the init gate open (with
    /// `Acquire`), and checks it again after this (`SeqCst`).
    #[cold]
    pub(crate) fn open() {
        imp::open_fast_gate();
    }

    /// Closes the word: an init is about to run, so calls must look at the
    /// gate again.
    #[cold]
    pub(crate) fn close() {
        imp::close_fast_gate();
    }

    /// True when [`open`](FastGate::open) has something to do.
    #[hot_path]
    pub(crate) fn is_shut() -> bool {
        imp::fast_gate_shut()
    }
}
