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
    /// certainly has no frame left, seen from the running call `asking`:
    ///
    /// * by its own mark (`Mark::holder_is_gone`);
    /// * or it is on the thread's own stack below the outermost call it ran
    ///   under, which is over: the stack was left above both (a `longjmp`
    ///   into the outermost call, say).
    ///
    /// A holder on another stack may be suspended there (a coroutine), so
    /// the outermost call's return alone does not tell it gone.
    pub(super) fn is_gone(self, asking: Holder, stack: &ThreadStack) -> bool {
        self.call.holder_is_gone(asking.call, stack)
            || (self.outermost != asking.outermost
                && self.call.address() < self.outer_address
                && stack.contains(self.call.address())
                && stack.contains(self.outer_address))
    }
}
