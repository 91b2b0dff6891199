//! How a call keeps its closure alive until it returns ([`Hold`]), besides
//! the owner's reference:
//!
//! * a `Closure::new` call holds its turn, which a retirement waits for
//!   (`exclusive::retire_turn`); a call waiting for the turn takes a
//!   reference meanwhile;
//! * a `Closure::concurrent` call announces the closure in its thread's
//!   hazard word (`sync::Hazard`), so calls from many threads share no
//!   counter; the retirement ([`retire`]) leaves the drop to the last one.
//!   A call that cannot announce takes a reference and records it
//!   (`run_recorded`);
//! * a once closure's call uses the owner's reference.
//!
//! An abandoned call keeps its hold: an announcement until its thread
//! exits ([`end_hold`]), a `Closure::new` turn until a later call takes it
//! back, a reference for good (the closure leaks).

use core::ptr::NonNull;

use super::allocation::{Header, release};
use super::owner::{CALLED, give_up_owner};
use crate::boundary::{Site, bound_context};
use crate::context::{CONTEXTS, ContextNode};
use crate::sync::{Hazard, MARKED};
use crate::valgrind;

/// How the calls of a closure keep it alive.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// Each call holds its turn: `Closure::new`.
    Turn,
    /// The one call uses the owner's reference: a once closure.
    Owner,
    /// An announcement where it can, else a recorded reference:
    /// `Closure::concurrent`.
    Announced,
}

/// What a call holds the closure by, to give up when it returns (a
/// `Closure::new` call's turn is `run_turn`'s).
pub(super) enum Held {
    /// A reference (its own, or the owner's for a once closure).
    Reference,
    /// The announcement in `hazard`, this thread's word.
    Announcement(&'static Hazard),
}

/// Takes what a call of the closure holds it by; for a
/// `Closure::concurrent` call, binds the thread first. `None` where such a
/// call cannot announce (it takes a reference in `run_recorded`). Taken
/// before `call`, from the thread's slot: in the body, the hold and the
/// call's records would live in memory across `call`.
///
/// # Safety
///
/// `header` belongs to a live closure whose calls hold it by `hold` (not
/// a turn); `site` is its site.
#[hot_path]
pub(super) unsafe fn hold(header: NonNull<Header>, site: &Site, hold: Hold) -> Option<Held> {
    match hold {
        Hold::Owner => {
            // SAFETY: a closure's header (caller obligation), or a dropped one's,
            // still kept, whose second call this catches.
            unsafe { give_up_owner(header, CALLED) };
            Some(Held::Reference)
        }
        Hold::Turn => unreachable!("a `Closure::new` call runs by `run_turn`"),
        Hold::Announced => {
            if let Some(node) = bound_context(site) {
                // SAFETY: forwarded caller obligation; `node` is bound to this
                // thread.
                if let Some(held) = unsafe { announce(node, header) } {
                    return Some(held);
                }
            }
            // Nested in an announced call, a word an abandoned call left, a
            // per-call thread, a shut gate.
            crate::hint::rarely_taken();
            None
        }
    }
}

/// Announces the closure of `header` in the hazard word of `node`, unless
/// the word is taken.
///
/// # Safety
///
/// `header` belongs to a live closure whose calls announce it; `node` is
/// the context bound to this thread (not a per-call one).
#[hot_path]
pub(super) unsafe fn announce(node: &'static ContextNode, header: NonNull<Header>) -> Option<Held> {
    let hazard = &node.value.hazard;
    // SAFETY: live (caller obligation).
    let marked = unsafe { (*header.as_ptr()).marked };
    // Exposed: `end_hold` may turn it back into a pointer.
    let object = header.as_ptr().expose_provenance();
    // SAFETY:
    // - `node` serves this thread, the only one announcing through its word,
    //   and stays bound; the word stays taken until `unhold`;
    // - a header is a non-zero multiple of 8, of a live closure not retired
    //   (the caller may call it).
    unsafe { hazard.announce(object, marked) }.then_some(Held::Announcement(hazard))
}

/// Gives up what a call held.
///
/// # Safety
///
/// `held` is what this thread's call of the closure held, and the call
/// uses the closure no more.
#[hot_path]
pub(super) unsafe fn unhold(header: NonNull<Header>, held: Held) {
    match held {
        // SAFETY: the call's reference (caller obligation).
        Held::Reference => unsafe { release(header) },
        Held::Announcement(hazard) => {
            // SAFETY: this thread's own word; the call is over (caller obligation).
            let withdrawn = unsafe { hazard.withdraw() };
            // Not the bare address: a retirement waits, or helgrind is told.
            if withdrawn != header.addr().get() {
                // SAFETY: forwarded caller obligation.
                unsafe { end_hold(withdrawn) };
            }
        }
    }
}

/// Ends a hold withdrawn from a hazard word with flags: tells helgrind,
/// and releases the call's part of a retirement that waits for it. Called
/// by the call, or by the hooks for a call its thread abandoned.
///
/// # Safety
///
/// `withdrawn` was withdrawn by (or for) the announcing call, which uses
/// the closure no more.
#[cold]
#[inline(never)]
pub(crate) unsafe fn end_hold(withdrawn: usize) {
    // An address `hold` exposed, of a closure whose retirement waits for
    // this hold or has not started.
    let Some(header) = NonNull::new(core::ptr::with_exposed_provenance_mut::<Header>(
        Hazard::object(withdrawn),
    )) else {
        return;
    };
    if withdrawn & MARKED != 0 {
        valgrind::happens_before(header.as_ptr());
    }
    // SAFETY: a retirement that deferred to the call keeps the closure
    // alive until the call's release, which happens once.
    if Hazard::deferred(withdrawn) && unsafe { (*header.as_ptr()).retirement.release() } {
        // SAFETY: the last holder of a closure with no reference left.
        unsafe { destroy_now(header) };
    }
}

/// The last release of a closure whose calls may announce it.
///
/// # Safety
///
/// The caller just released the last reference.
pub(super) unsafe fn retire(header: NonNull<Header>) {
    // SAFETY: alive until destroyed below (caller obligation).
    let shared = unsafe { header.as_ref() };
    if shared.marked != 0 {
        // For helgrind: this thread's reads happen before the drop.
        valgrind::happens_before(header.as_ptr());
    }
    // SAFETY: retired once (the last reference goes once); a thread
    // announces only in its context's word, and `CONTEXTS` has them all.
    let unheld = unsafe {
        shared.retirement.retire(
            header.addr().get(),
            CONTEXTS.iter().map(|node| &node.value.hazard),
        )
    };
    if unheld {
        // SAFETY: no reference left and no call holds it.
        unsafe { destroy_now(header) };
    }
}

/// Drops the closure.
///
/// # Safety
///
/// Nothing holds the closure: no reference, no announcing call, no turn.
pub(super) unsafe fn destroy_now(header: NonNull<Header>) {
    // SAFETY: alive until the call below (caller obligation).
    let shared = unsafe { header.as_ref() };
    if shared.marked != 0 {
        valgrind::happens_after(header.as_ptr());
    }
    // SAFETY: `destroy` is this allocation's (`allocate`); nothing holds
    // the closure (caller obligation).
    unsafe { (shared.destroy)(header) };
}
