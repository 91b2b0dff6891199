//! The drop of closures: the allocation stays readable after it, for the
//! misuse checks, until later drops free it. (No other unit test makes
//! closures, so this test's drops are the only ones to reach the
//! tombstones.)

use core::ffi::c_void;
use core::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as StdOrdering};

use super::allocation::Header;
use super::owner::{FREED, OWNED};
use super::tombstones::{MAX_SIZE, SLOTS, holds};
use super::{Closure, OnceClosure};
use crate::sync::Ordering;

/// Counts its drops.
struct Probe(Arc<AtomicUsize>);

impl Drop for Probe {
    fn drop(&mut self) {
        self.0.fetch_add(1, StdOrdering::Relaxed);
    }
}

fn header_of(data: *mut c_void) -> NonNull<Header> {
    NonNull::new(data.cast::<Header>()).expect("a closure's data is not NULL")
}

/// The owner word of a kept closure.
fn owner_of(header: NonNull<Header>) -> u32 {
    assert!(holds(header), "the closure's allocation is not kept");
    // SAFETY: kept (checked above), and only this test keeps or frees.
    unsafe { (*header.as_ptr()).owner.load(Ordering::Relaxed) }
}

#[test]
fn a_dropped_closure_stays_readable_until_later_drops_free_it() {
    let drops = Arc::new(AtomicUsize::new(0));

    // C's `free`: the body is dropped, the allocation kept, marked freed.
    let probe = Probe(Arc::clone(&drops));
    let parts = Closure::<fn(i32) -> i32>::new(-1, move |x: i32| {
        let _ = &probe;
        x
    })
    .into_raw_parts();
    let freed = header_of(parts.data);
    // SAFETY: the closure's own `free`, called once.
    unsafe { (parts.free)(parts.data) };
    assert_eq!(drops.load(StdOrdering::Relaxed), 1, "the body was dropped");
    assert_eq!(owner_of(freed), FREED);

    // A once closure C frees uncalled, and a `Closure` dropped by its
    // handle: kept too, the handle's drop leaving the owner word alone.
    let probe = Probe(Arc::clone(&drops));
    let parts = OnceClosure::<fn()>::new((), move || drop(probe)).into_raw_parts();
    let once = header_of(parts.data);
    // SAFETY: the closure's own `free`, called once, and no call.
    unsafe { (parts.free)(parts.data) };
    let probe = Probe(Arc::clone(&drops));
    let handle = Closure::<fn()>::concurrent((), move || {
        let _ = &probe;
    });
    let dropped = header_of(handle.data());
    drop(handle);
    assert_eq!(
        drops.load(StdOrdering::Relaxed),
        3,
        "every body was dropped"
    );
    assert_eq!(owner_of(once), FREED);
    assert_eq!(owner_of(dropped), OWNED);

    // Larger than the tombstones keep: freed at the drop.
    let big = [1_u8; MAX_SIZE];
    let parts = Closure::<fn() -> u8>::new(0, move || big[0]).into_raw_parts();
    let large = header_of(parts.data);
    // SAFETY: the closure's own `free`, called once.
    unsafe { (parts.free)(parts.data) };
    assert!(!holds(large), "a large closure was kept");

    // `SLOTS` more drops free the first three. All made before any of
    // them is dropped, so none reuses an address freed meanwhile.
    let later: Vec<_> = (0..SLOTS)
        .map(|_| Closure::<fn()>::new((), || {}))
        .collect();
    drop(later);
    for header in [freed, once, dropped] {
        assert!(!holds(header), "kept after {SLOTS} later drops");
    }
}
