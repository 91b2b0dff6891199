//! The thread's slot: one pointer per thread that says which context serves
//! it ([`thread`](crate::thread) gives the values their meaning).
//!
//! No destructor, so it works throughout thread teardown. Only `thread`
//! writes it and dereferences what it reads. Three ways in: [`get`],
//! [`set`] and [`claim`] reach it anew (slow paths); [`Slot`] is the slot
//! as a fast path reached it; [`FastGate`] is the word that stands for the
//! init gate where the fast path's reach folds the gate in.
//!
//! On glibc Linux the slot is a TLS symbol read through a TLS descriptor,
//! or at its static offset from the thread pointer once known (x86-64;
//! aarch64, where a slot in dynamic TLS is reached out of line); on x86-64
//! mingw-w64 (whose `thread_local!` is a call) a `TlsAlloc` slot read from
//! the TEB; elsewhere, or with `--cfg callgate_portable_tls`, a
//! `thread_local!`.

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

/// [`Slot`] and [`FastGate`] where there is no static offset to keep.
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
/// `value` is null, `thread`'s `EXITED` marker, a node of `CONTEXTS` that
/// serves the calling thread, or one cached for it: `thread` dereferences
/// every other value it reads.
#[hot_path]
pub(crate) unsafe fn set(value: *const ContextNode) {
    imp::set(value);
}

/// Stores `value` if the slot still holds `expected`, else returns what it
/// holds; indivisible for a signal handler on the thread.
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

/// The calling thread's slot as a fast path reached it (on x86-64 glibc,
/// no second call into the descriptor's resolver). Reached only past the
/// open gate: each way in takes `gate_open`, which a target with a
/// [`FastGate`] never calls.
pub(crate) struct Slot {
    at: imp::SlotAt,
    _thread: PhantomData<*const ()>,
}

impl Slot {
    /// The slot the fast paths' way: at its static offset, or through the
    /// descriptor in dynamic TLS (x86-64; on aarch64 that call needs a
    /// frame, so `None`). `None` while the fast path is closed.
    #[hot_path]
    pub(crate) fn fast(gate_open: impl FnOnce() -> bool) -> Option<Slot> {
        imp::fast_at(gate_open).map(Slot::new)
    }

    /// As [`fast`](Slot::fast), but never with a call.
    #[hot_path]
    pub(crate) fn without_call(gate_open: impl FnOnce() -> bool) -> Option<Slot> {
        imp::without_call_at(gate_open).map(Slot::new)
    }

    /// The slot through the descriptor where it is in dynamic TLS and the
    /// gate is open or skipped, for a whole cold path; else `None`.
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

    /// Clears the slot's top bit, in one step a signal handler sees whole;
    /// returns the new value, or `None` if the bit was clear (or, where a
    /// compare-and-swap from `seen` does it, the slot changed).
    ///
    /// # Safety
    ///
    /// Every slot value with its top bit set is, untagged, a value the caller
    /// may [`set`] now.
    #[hot_path]
    pub(crate) unsafe fn untag(&self, seen: *const ContextNode) -> Option<*const ContextNode> {
        imp::untag_at(&self.at, seen)
    }
}

/// The init gate's fast-path word, open only while the gate is: on glibc
/// Linux (x86-64, aarch64) the slot's recorded static offset (or a word for
/// dynamic TLS); elsewhere none. `init::open_fast_path` orders the checks.
pub(crate) struct FastGate;

impl FastGate {
    /// Opens the word; the caller saw the gate open, and checks again after.
    #[cold]
    pub(crate) fn open() {
        imp::open_fast_gate();
    }

    /// Closes the word: an init is about to run.
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
