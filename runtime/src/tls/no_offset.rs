//! [`Slot`](crate::tls::Slot) and [`FastGate`](crate::tls::FastGate) where
//! there is no static offset to keep: the fast path checks the gate itself.

use crate::context::ContextNode;

/// Nothing to keep: [`get`](super::get) reaches the slot again.
pub(crate) struct SlotAt;

#[hot_path]
pub(crate) fn fast_at(gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    without_call_at(gate_open)
}

#[hot_path]
pub(crate) fn without_call_at(gate_open: impl FnOnce() -> bool) -> Option<SlotAt> {
    gate_open().then_some(SlotAt)
}

#[hot_path]
pub(crate) fn dynamic_at(_gate_skipped: bool) -> Option<SlotAt> {
    None
}

#[hot_path]
pub(crate) fn get_at(_at: &SlotAt) -> *const ContextNode {
    super::imp::get()
}

#[hot_path]
pub(crate) fn set_at(_at: &SlotAt, value: *const ContextNode) {
    super::imp::set(value);
}

/// A claim of the slot from `seen`.
#[hot_path]
pub(crate) fn untag_at(_at: &SlotAt, seen: *const ContextNode) -> Option<*const ContextNode> {
    const TOP_BIT: usize = 1 << (usize::BITS - 1);
    if seen.addr() & TOP_BIT == 0 {
        return None;
    }
    let untagged = seen.map_addr(|address| address & !TOP_BIT);
    super::imp::claim(seen, untagged).ok()?;
    Some(untagged)
}

pub(crate) fn open_fast_gate() {}

pub(crate) fn close_fast_gate() {}

#[hot_path]
pub(crate) fn fast_gate_shut() -> bool {
    false
}
