//! The two words a bound call writes as it enters and clears as it leaves.

use core::cell::UnsafeCell;

/// The entry word and the outermost running call's anchor address, in 16
/// aligned bytes that the outermost call's leave clears with one store.
/// The entry word packs, so an outermost call holding a `#[local]` value
/// also enters with one store:
///
/// * the *depth*, low 31 bits: the callbacks running on the owner as far
///   as the runtime knows (see [`stack`](crate::stack));
/// * [`ADVANCED`], bit 31;
/// * the *held* index, high 32 bits: the `#[local]` value the outermost
///   call holds ([`enter_idle_holding`](super::Context::enter_idle_holding)),
///   or 0; non-zero only while the depth is.
///
/// The address is read only while the depth is non-zero. Since the leave
/// overwrites both words, the compiler drops the call's records (and the
/// anchor's token) wherever the body cannot read them.
#[repr(C, align(16))]
pub(super) struct Running(UnsafeCell<[u64; 2]>);

impl Running {
    pub(super) const fn new() -> Running {
        Running(UnsafeCell::new([0; 2]))
    }

    #[hot_path]
    pub(super) fn entry(&self) -> u64 {
        // SAFETY: only the context's owner reaches `Running` (through `unsafe`
        // `Context` methods), and no reference into the cell outlives a call.
        unsafe { (*self.0.get())[0] }
    }

    #[hot_path]
    pub(super) fn set_entry(&self, entry: u64) {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[0] = entry };
    }

    #[hot_path]
    pub(super) fn outer(&self) -> usize {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[1] as usize }
    }

    #[hot_path]
    pub(super) fn set_outer(&self, address: usize) {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[1] = address as u64 };
    }

    /// No call running: both words 0, in one 16-byte store.
    #[hot_path]
    pub(super) fn set_idle(&self) {
        // SAFETY: as in `entry`.
        unsafe { *self.0.get() = [0; 2] };
    }
}

/// The entry word's bit that says the outermost token moved past the
/// running outermost call's (`Context::running_token`); set only while the
/// depth is at least 1.
pub(super) const ADVANCED: u32 = 1 << 31;

pub(super) const DEPTH: u32 = !ADVANCED;
