//! How a call keeps its closure alive until it returns ([`Hold`]). The
//! owner holds a reference; a call, by the closure's kind:
//!
//! * a `Closure::new` call takes a reference of its own, a count shared by
//!   every thread (its calls take turns anyway);
//! * a `Closure::concurrent` call announces the closure in its thread's
//!   hazard word instead (`sync::Hazard`), so that calls from many threads
//!   do not contend for one counter. The retirement ([`retire`]) reads
//!   every context's word and leaves the drop to the last call it finds
//!   announcing. A call that finds its word taken, or runs on a thread
//!   attached per call, takes a reference and records it in its context
//!   (`run_recorded`);
//! * the call of a once closure uses the owner's reference.
//!
//! A call abandoned by a `longjmp` out of the body keeps its hold: an
//! announcement until its thread exits ([`end_hold`]; the thread's later
//! calls take references meanwhile); a `Closure::new` call's reference
//! until a later call takes the turn back (see `Exclusive::with`); any
//! other reference for good (the closure leaks).
//!
//! The drop is ordered after every call's use of the closure as the
//! "Atomic orderings" of `allocation` say.

use core::ptr::NonNull;

use super::allocation::{Header, release, retain};
use super::owner::{CALLED, give_up_owner};
use crate::boundary::{Site, bound_context};
use crate::context::CONTEXTS;
use crate::sync::{Hazard, MARKED};
use crate::valgrind;

/// How the calls of a closure keep it alive (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// Each call takes a reference of its own: `Closure::new`.
    Counted,
    /// The one call uses the owner's reference: a once closure.
    Owner,
    /// A call announces the closure in its thread's hazard word where it
    /// can, else takes a reference and records it in its context:
    /// `Closure::concurrent`.
    Announced,
}

/// What a call holds the closure by, to give up when it returns.
pub(super) enum Held {
    /// A reference (its own, or the owner's for a once closure).
    Reference,
    /// The announcement in `hazard`, this thread's word.
    Announcement(&'static Hazard),
}

/// Takes what a call of the closure of `header` holds it by, as `hold`
/// says; for a `Closure::concurrent` call, binds the thread if it was
/// not. `None` where such a call cannot announce the closure: it takes a
/// reference in `run_recorded` instead.
///
/// Taken before `call`, from the thread's slot, rather than in the body:
/// there the hold, and the call's records, would live in memory across
/// `call`.
///
/// # Safety
///
/// `header` belongs to a live closure, whose calls hold it by `hold`, and
/// `site` is its site.
#[hot_path]
pub(super) unsafe fn hold(header: NonNull<Header>, site: &Site, hold: Hold) -> Option<Held> {
    match hold {
        Hold::Owner => {
            // SAFETY: the header of a closure (caller obligation), or of
            // one already dropped and still kept, whose second call this
            // catches.
            unsafe { give_up_owner(header, CALLED) };
            return Some(Held::Reference);
        }
        Hold::Counted => {}
        Hold::Announced => {
            if let Some(node) = bound_context(site) {
                let hazard = &node.value.hazard;
                // SAFETY: live (caller obligation).
                let marked = unsafe { (*header.as_ptr()).marked };
                // Exposed: `end_hold` may turn the word back into a pointer.
                let object = header.as_ptr().expose_provenance();
                // SAFETY:
                // - `node` serves this thread, the only one that announces
                //   through its word, and stays bound to it; the word stays
                //   taken until this call withdraws in `unhold`;
                // - a header is a non-zero multiple of 8, of a closure that
                //   is alive and not retired (the caller may call it).
                if unsafe { hazard.announce(object, marked) } {
                    return Some(Held::Announcement(hazard));
                }
            }
            // A call nested in an announced one, a word left taken by an
            // abandoned call, a thread attached per call, a gate shut.
            crate::hint::rarely_taken();
            return None;
        }
    }
    // SAFETY: live (caller obligation).
    unsafe { retain(header) };
    Some(Held::Reference)
}

/// Gives up what a call held.
///
/// # Safety
///
/// `held` is what the call of the closure of `header` on this thread
/// held, and the call returned: it uses the closure no more.
#[hot_path]
pub(super) unsafe fn unhold(header: NonNull<Header>, held: Held) {
    match held {
        // SAFETY: the call's reference (caller obligation).
        Held::Reference => unsafe { release(header) },
        Held::Announcement(hazard) => {
            // SAFETY: this thread announced through its own word, and the
            // call is over (caller obligation).
            let withdrawn = unsafe { hazard.withdraw() };
            // Anything but the bare address: a retirement waits for this
            // call, or helgrind is told.
            if withdrawn != header.addr().get() {
                // SAFETY: forwarded caller obligation.
                unsafe { end_hold(withdrawn) };
            }
        }
    }
}

/// Ends a hold withdrawn from a hazard word with flags (or nothing, for
/// 0): tells helgrind that the call's uses happen before the drop, and
/// releases the call's part of a retirement that waits for it. Called by
/// the call itself, or by the hooks for a call its thread abandoned.
///
/// # Safety
///
/// `withdrawn` is what a hazard word held, withdrawn by (or for) the call
/// that announced it, which uses the closure no more.
#[cold]
#[inline(never)]
pub(crate) unsafe fn end_hold(withdrawn: usize) {
    // An address `hold` exposed, of a closure still alive: its retirement
    // waits for this hold, or has not started.
    let Some(header) = NonNull::new(core::ptr::with_exposed_provenance_mut::<Header>(
        Hazard::object(withdrawn),
    )) else {
        return;
    };
    if withdrawn & MARKED != 0 {
        valgrind::happens_before(header.as_ptr());
    }
    // SAFETY: a retirement that deferred to the call keeps the closure
    // alive until the call's release; the call releases once.
    if Hazard::deferred(withdrawn) && unsafe { (*header.as_ptr()).retirement.release() } {
        // SAFETY: the last holder of a closure with no reference left.
        unsafe { destroy_now(header) };
    }
}

/// The last release of a closure whose calls may announce it: drops it
/// now, or leaves that to the last of the calls announcing it.
///
/// # Safety
///
/// The last reference to the closure of `header` was just released, by
/// the caller.
pub(super) unsafe fn retire(header: NonNull<Header>) {
    // SAFETY: no reference is left, but the allocation is alive until
    // destroyed below (caller obligation).
    let shared = unsafe { header.as_ref() };
    if shared.marked != 0 {
        // For helgrind: this thread's reads of the header happen before
        // the drop, on whichever thread it runs.
        valgrind::happens_before(header.as_ptr());
    }
    // SAFETY: the closure's own retirement, once (the last reference goes
    // once); a thread announces it only in its context's word, and
    // `CONTEXTS` has every context.
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

/// Drops the closure of `header`.
///
/// # Safety
///
/// Nothing holds the closure any more: no reference, no announcing call.
unsafe fn destroy_now(header: NonNull<Header>) {
    // SAFETY: alive until the call below (caller obligation).
    let shared = unsafe { header.as_ref() };
    if shared.marked != 0 {
        valgrind::happens_after(header.as_ptr());
    }
    // SAFETY: `destroy` was set by `allocate` for this allocation's type;
    // nothing holds the closure (caller obligation).
    unsafe { (shared.destroy)(header) };
}
