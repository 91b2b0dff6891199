//! [`Holder`]: the call a hold through a slot's state records, and when
//! that call is certainly gone, so that its hold is stale.

use crate::stack::{Mark, ThreadStack};

/// A running call that asks for a `#[local]` value, as the hold it may
/// take records it: its mark, and the outermost call it runs under.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Holder {
    /// The call's own mark.
    pub(crate) call: Mark,
    /// The number of the outermost call it runs under (`Context::calls`).
    pub(crate) outermost: u64,
    /// Where that outermost call's anchor is.
    pub(crate) outer_address: usize,
}

impl Holder {
    pub(super) const NONE: Holder = Holder {
        call: Mark::new(0, 0),
        outermost: 0,
        outer_address: 0,
    };

    /// Asking from outside every call, once the outermost call is over:
    /// no mark of its own, and under no outermost call.
    pub(super) const OVER: Holder = Holder {
        call: Mark::new(0, 0),
        outermost: u64::MAX,
        outer_address: 0,
    };

    /// True when this call, which took a value through the slot's state,
    /// certainly has no frame left, seen from the running call `asking`
    /// (on the thread whose stack is `stack`):
    ///
    /// * by its own mark (`Mark::holder_is_gone`);
    /// * or it is on the thread's own stack, below the outermost call it
    ///   ran under, which is on that stack too and is over (`asking` runs
    ///   under another): that call returned or was found gone, so the
    ///   stack was left above both. This finds a call abandoned by a
    ///   `longjmp` that landed inside the outermost call even where its
    ///   token was not overwritten.
    ///
    /// The return of the outermost call alone does not tell a holder on
    /// another stack gone: on one thread with several stacks it may be
    /// suspended there (a callback on one coroutine returns while one that
    /// started after it on another is suspended).
    pub(super) fn is_gone(self, asking: Holder, stack: &ThreadStack) -> bool {
        self.call.holder_is_gone(asking.call, stack)
            || (self.outermost != asking.outermost
                && self.call.address() < self.outer_address
                && stack.contains(self.call.address())
                && stack.contains(self.outer_address))
    }
}
