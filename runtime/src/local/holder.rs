//! [`Holder`]: the call a hold through a slot's state records, and when it
//! is certainly gone.

use crate::stack::{Mark, ThreadStack};

/// A call asking for a `#[local]` value, as its hold records it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Holder {
    pub(crate) call: Mark,
    /// The token of the outermost call it runs under.
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

    /// Asking from outside every call, once the outermost call is over.
    pub(super) const OVER: Holder = Holder {
        call: Mark::new(0, 0),
        outermost: u64::MAX,
        outer_address: 0,
    };

    /// True when this holder certainly has no frame left, seen from the
    /// running call `asking`: by its own mark (`Mark::holder_is_gone`), or it
    /// is on the thread's own stack below the outermost call it ran under,
    /// which is over (a `longjmp` into that call, say). A holder on another
    /// stack may be suspended there, so an outermost return alone does not do.
    pub(super) fn is_gone(self, asking: Holder, stack: &ThreadStack) -> bool {
        self.call.holder_is_gone(asking.call, stack)
            || (self.outermost != asking.outermost
                && self.call.address() < self.outer_address
                && stack.contains(self.call.address())
                && stack.contains(self.outer_address))
    }
}
