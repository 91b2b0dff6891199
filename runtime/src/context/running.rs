//! The two words a bound call writes as it enters and clears as it leaves:
//! the entry word and the outermost call's anchor address.

use core::cell::UnsafeCell;

/// The entry word and the address of the outermost running call's
/// anchor, side by side in 16 aligned bytes, so that the outermost call
/// leaves by clearing both with one store.
///
/// The entry word packs three fields, so that the outermost call of a
/// callback with one `#[local]` parameter enters with one store and every
/// outermost call leaves with one:
///
/// * the low 31 bits, the *depth*: how many callbacks are running on the
///   owning thread right now, as far as the runtime knows (calls whose
///   frames were abandoned, by `longjmp` or a forced unwind, are counted
///   until a `leave` or the next entry finds out; see
///   [`stack`](crate::stack));
/// * bit 31, [`ADVANCED`]: something inside the outermost call may leave
///   a mark behind, so the outermost token moved past the call's, which
///   is in `Context::running_token`;
/// * the high 32 bits, the *held* index: the `#[local]` value the
///   outermost call took through
///   [`enter_idle_holding`](super::Context::enter_idle_holding), or 0.
///   It is non-zero only while the depth is.
///
/// The address (its token is `Context::outer_token`) is only read while
/// the depth is non-zero. Since the leave overwrites both words, the
/// outermost call's records (these words and the anchor's token) are dead
/// stores wherever the compiler sees that nothing can read them before
/// the leave, and it drops them: a body inlined into the trampoline that
/// calls nothing it cannot see and writes through no pointer that might
/// reach the context. A `#[local]` value taken on the fast path reaches
/// the body as a `&mut T` (`boundary::outermost_holding`), which the
/// compiler knows reaches nothing else, so using it keeps them dead.
#[repr(C, align(16))]
pub(super) struct Running(UnsafeCell<[u64; 2]>);

impl Running {
    pub(super) const fn new() -> Running {
        Running(UnsafeCell::new([0; 2]))
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(super) fn entry(&self) -> u64 {
        // SAFETY: only the context's owner reaches `Running` (the
        // `Context` methods that do are `unsafe`, their callers vouch for
        // it), and no reference into the cell outlives a method.
        unsafe { (*self.0.get())[0] }
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(super) fn set_entry(&self, entry: u64) {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[0] = entry };
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(super) fn outer(&self) -> usize {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[1] as usize }
    }

    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(super) fn set_outer(&self, address: usize) {
        // SAFETY: as in `entry`.
        unsafe { (*self.0.get())[1] = address as u64 };
    }

    /// No call running: both words 0, in one 16-byte store.
    #[cfg_attr(not(callgate_unoptimized), inline(always))]
    pub(super) fn set_idle(&self) {
        // SAFETY: as in `entry`.
        unsafe { *self.0.get() = [0; 2] };
    }
}

/// The bit of the entry word's low half that says the outermost token
/// moved past the running outermost call's
/// ([`Context::advance_past_running`](super::Context::advance_past_running)).
/// Set only while the depth is at least 1: every store that makes the
/// depth 0 clears it, and so does a call that becomes the outermost one in
/// place of a gone one (`free_entry_hold`).
pub(super) const ADVANCED: u32 = 1 << 31;

/// The depth's bits of the entry word's low half.
pub(super) const DEPTH: u32 = !ADVANCED;
