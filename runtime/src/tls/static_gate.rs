//! What the two architectures whose slot may sit at a static offset
//! (x86-64 and aarch64 glibc Linux) share of the fast gate: the probe's
//! result ([`PROBED`]), and the opening and closing of the two hidden
//! words. Each architecture's `static_offset` module, whose child this is,
//! gives the words (`static_word`, `descriptor_word`), the probe
//! (`static_offset`) and `NO_STATIC_OFFSET`.

use core::sync::atomic::{AtomicIsize, Ordering};

use super::{NO_STATIC_OFFSET, descriptor_word, static_offset, static_word};

/// What `static_offset` found, once it ran: the offset, or
/// `NO_STATIC_OFFSET`. 0 before. (A library's TLS stays where the dynamic
/// linker put it while the library is loaded.)
pub(super) static PROBED: AtomicIsize = AtomicIsize::new(0);

/// Records the slot's static offset, if it has one: `static_at` finds it
/// from now on. Else opens the descriptor's way (`descriptor_open`).
#[cold]
pub(crate) fn open_fast_gate() {
    // Relaxed: the probe's result is the same whichever thread computes
    // it, and publishes nothing else.
    let mut offset = PROBED.load(Ordering::Relaxed);
    if offset == 0 {
        offset = static_offset().unwrap_or(NO_STATIC_OFFSET);
        PROBED.store(offset, Ordering::Relaxed);
    }
    // SeqCst: see "Atomic orderings" in the parent module's docs.
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
pub(crate) fn static_missing() -> bool {
    // Relaxed: a hint, as in `fast_gate_shut`; the probe's result does not
    // change while the library is loaded, and a caller that reads 0 here
    // takes the slow path, which probes.
    PROBED.load(Ordering::Relaxed) == NO_STATIC_OFFSET
}

/// Forgets the static offset and closes the descriptor's way: every call
/// looks at the gate.
#[cold]
pub(crate) fn close_fast_gate() {
    // SeqCst: see "Atomic orderings" in the parent module's docs.
    static_word().store(0, Ordering::SeqCst);
    descriptor_word().store(0, Ordering::SeqCst);
}
