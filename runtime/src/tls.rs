//! The thread's current-context slot: one pointer per thread, read by every
//! call on its fast path.
//!
//! The slot has no destructor, so it can be read and written at any point of
//! thread teardown, pthread key destructors included. Only
//! [`thread`](crate::thread) writes it, and [`thread::current`] dereferences
//! what it reads.
//!
//! Which implementation is used depends on the target:
//!
//! * x86-64 glibc Linux: a TLS symbol read through a TLS descriptor
//!   (`tls/x86_64_linux_gnu.rs`), which never needs static TLS;
//! * x86-64 Windows with mingw-w64 (`-gnu`), whose `thread_local!` is an
//!   OS key behind a call: a `TlsAlloc` slot read from the TEB
//!   (`tls/x86_64_windows_gnu.rs`);
//! * elsewhere, or with `--cfg callgate_portable_tls`: a `thread_local!`
//!   (`tls/portable.rs`).
//!
//! [`thread::current`]: crate::thread::current

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

#[cfg(not(all(
    target_arch = "x86_64",
    any(target_os = "linux", windows),
    target_env = "gnu",
    not(callgate_portable_tls)
)))]
#[path = "tls/portable.rs"]
mod imp;

/// The static-offset operations of the slots that have no static offset
/// (the portable and the Windows one re-export these): `HAS_STATIC` is
/// false, so the fast path never reads through them, and the rest say the
/// fast path is closed.
#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(callgate_portable_tls)
)))]
mod no_static {
    use crate::context::ContextNode;

    pub(crate) const HAS_STATIC: bool = false;

    /// No static read on this target.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn get_static() -> Option<*const ContextNode> {
        None
    }

    pub(crate) fn open_static() {}

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn static_closed() -> bool {
        false
    }

    /// No static offset to miss: `HAS_STATIC` is false.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn static_missing() -> bool {
        false
    }

    /// No descriptor on this target.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn descriptor_open() -> bool {
        false
    }

    /// No slot found through a descriptor on this target: never made.
    pub(crate) enum SlotAt {}

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn slot_at() -> Option<SlotAt> {
        None
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn static_at() -> Option<SlotAt> {
        None
    }

    pub(crate) fn get_at(at: &SlotAt) -> *const ContextNode {
        match *at {}
    }

    pub(crate) fn clear_top_bit_of(at: &SlotAt) -> Option<*const ContextNode> {
        match *at {}
    }

    pub(crate) fn set_of(at: &SlotAt, _value: *const ContextNode) {
        match *at {}
    }

    pub(crate) fn close_static() {}
}

/// The calling thread's slot: null until the thread stores something.
/// Read at the static offset while it is recorded (see [`get_static`]),
/// where the target has one, which saves the slow paths a call.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn get() -> *const ContextNode {
    imp::get()
}

/// True when the slot can be read at a static offset ([`get_static`]),
/// which also stands for the init gate; false where the fast path reads
/// the gate and then [`get`].
pub(crate) const HAS_STATIC: bool = imp::HAS_STATIC;

/// The calling thread's slot read at its static offset, without a call;
/// `None` while the fast path is closed: before [`open_static`], after
/// [`close_static`], and always when the slot has no static offset or
/// the target has no such read ([`HAS_STATIC`] is false).
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn get_static() -> Option<*const ContextNode> {
    imp::get_static()
}

/// Opens the fast path of [`get_static`] if the slot has a static offset,
/// and [`descriptor_open`]'s way if it has none. The caller has seen the
/// init gate open (with `Acquire`): a call that reads the slot either way
/// skips the gate.
#[cold]
pub(crate) fn open_static() {
    imp::open_static();
}

/// True when neither [`get_static`]'s nor [`descriptor_open`]'s way is
/// open where the target has them: [`open_static`] has something to do.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn static_closed() -> bool {
    imp::static_closed()
}

/// True when the slot is known to have no static offset (on x86-64
/// glibc, a library whose TLS block is in dynamic TLS): [`get_static`]
/// stays `None` and every access goes through [`get`]'s descriptor for as
/// long as the library is loaded. False where [`HAS_STATIC`] is false,
/// and while that is not known yet.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn static_missing() -> bool {
    imp::static_missing()
}

/// True while the init gate is open and the slot is known to have no
/// static offset ([`static_missing`]): a call may then read the slot
/// through the descriptor ([`thread_slot`]) without looking at the gate.
/// One load; it stands for the gate as the static offset does. False
/// where [`HAS_STATIC`] is false.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn descriptor_open() -> bool {
    imp::descriptor_open()
}

/// The calling thread's slot at its offset from the thread pointer, as the
/// TLS descriptor gave it or as recorded (the static offset): reads and
/// writes through it cost no call. Tied to the thread that found it
/// (neither `Send` nor `Sync`), whose slot stays where it is for as long
/// as the library is loaded.
pub(crate) struct ThreadSlot {
    at: imp::SlotAt,
    _thread: PhantomData<*const ()>,
}

/// The calling thread's slot through the TLS descriptor (one call), on
/// targets that read the slot through one; `None` elsewhere. For the fast
/// paths of a slot in dynamic TLS ([`static_missing`]), which would
/// otherwise go through the descriptor on every access.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn thread_slot() -> Option<ThreadSlot> {
    imp::slot_at().map(ThreadSlot::new)
}

/// The calling thread's slot as the fast paths reach it: at the static
/// offset while it is recorded (no call), else through the descriptor (one
/// call) while [`descriptor_open`]; `None` otherwise (the fast path is
/// closed), and always where [`HAS_STATIC`] is false. Either way it
/// stands for the open gate.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn fast_thread_slot() -> Option<ThreadSlot> {
    let at_static = imp::static_at().map(ThreadSlot::new);
    if at_static.is_none() && imp::descriptor_open() {
        return thread_slot();
    }
    at_static
}

impl ThreadSlot {
    /// The calling thread's slot at `at`, found on this thread.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    fn new(at: imp::SlotAt) -> ThreadSlot {
        ThreadSlot {
            at,
            _thread: PhantomData,
        }
    }

    /// The slot's value (as [`get`]).
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) fn get(&self) -> *const ContextNode {
        imp::get_at(&self.at)
    }

    /// Clears the top bit of the slot, in one instruction where the target
    /// allows it (so a signal handler on this thread sees the slot before
    /// or after, never in between), and returns the slot's new value if
    /// that bit was set; `None` (nothing changed) if it was clear.
    ///
    /// # Safety
    ///
    /// Every slot value with its top bit set is, with that bit cleared, a
    /// value the caller may [`set`] at this point.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn clear_top_bit(&self) -> Option<*const ContextNode> {
        imp::clear_top_bit_of(&self.at)
    }

    /// [`set`] through this slot.
    ///
    /// # Safety
    ///
    /// As for [`set`].
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(crate) unsafe fn set(&self, value: *const ContextNode) {
        imp::set_of(&self.at, value);
    }
}

/// Closes the fast path of [`get_static`] and [`descriptor_open`]'s way:
/// an init is about to run, so calls must look at the gate again.
#[cold]
pub(crate) fn close_static() {
    imp::close_static();
}

/// Stores `value` in the calling thread's slot (at the static offset while
/// it is recorded, as [`get`] reads it).
///
/// # Safety
///
/// `value` is null, the `EXITED` marker of `thread`, a node of
/// `CONTEXTS` that serves the calling thread, or one cached for it (tagged
/// by `thread`): `thread::current` dereferences every other value it reads.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
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
