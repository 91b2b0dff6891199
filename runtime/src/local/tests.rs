use core::any::TypeId;

use super::registry::index_of;
use super::{Holder, Local, LocalKey, Locals, held_in};
use crate::stack::{Anchor, Mark, ThreadStack};

/// A call marked `call` under the outermost call numbered `outermost`,
/// whose anchor is at `outer_address` (0: unknown).
fn at(call: Mark, outermost: u64, outer_address: usize) -> Holder {
    Holder {
        call,
        outermost,
        outer_address,
    }
}

/// Distinct `Local` types, by number.
#[derive(Default)]
struct Numbered<const N: usize> {
    uses: u32,
    binds: u32,
    releases: u32,
}

impl<const N: usize> Local for Numbered<N> {
    fn bind(&mut self) {
        self.binds += 1;
    }

    fn release(&mut self) {
        self.releases += 1;
    }
}

fn ids() -> [TypeId; 12] {
    [
        TypeId::of::<[u8; 1]>(),
        TypeId::of::<[u8; 2]>(),
        TypeId::of::<[u8; 3]>(),
        TypeId::of::<[u8; 4]>(),
        TypeId::of::<[u8; 5]>(),
        TypeId::of::<[u8; 6]>(),
        TypeId::of::<[u8; 7]>(),
        TypeId::of::<[u8; 8]>(),
        TypeId::of::<[u8; 9]>(),
        TypeId::of::<[u8; 10]>(),
        TypeId::of::<[u8; 11]>(),
        TypeId::of::<[u8; 12]>(),
    ]
}

#[test]
fn concurrent_first_lookups_agree_on_one_index_per_type() {
    let ids = ids();
    let barrier = std::sync::Barrier::new(8);
    let seen: Vec<Vec<u32>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..8)
            .map(|thread| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    // Each thread registers the types in its own order.
                    let mut indices = vec![0; ids.len()];
                    for step in 0..ids.len() {
                        let which = (step * (thread + 1) + thread) % ids.len();
                        indices[which] = index_of(ids[which]);
                    }
                    for (which, id) in ids.iter().enumerate() {
                        indices[which] = index_of(*id);
                    }
                    indices
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for indices in &seen {
        assert_eq!(indices, &seen[0], "every thread sees the same indices");
    }
    let mut distinct = seen[0].clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        ids.len(),
        "one index per type: {:?}",
        seen[0]
    );
    assert!(distinct.iter().all(|&index| index >= 1));
}

#[test]
fn keys_of_one_type_share_its_value_and_types_keep_their_own() {
    static A1: LocalKey<Numbered<1>> = LocalKey::new();
    static A2: LocalKey<Numbered<1>> = LocalKey::new();
    static B: LocalKey<Numbered<2>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    let call = Anchor::new();
    call.mark(1);
    // SAFETY: marked above.
    let me = at(unsafe { call.holder_mark() }, 1, 0);
    // SAFETY: this thread owns `locals`; each `LocalRef` is dropped
    // before the next lookup of its type.
    unsafe {
        locals.get(&B, 1, 0, me, &stack).unwrap().uses += 10;
        locals.get(&A1, 1, 0, me, &stack).unwrap().uses += 1;
        locals.get(&A2, 1, 0, me, &stack).unwrap().uses += 1;
        assert_eq!(locals.get(&A1, 1, 0, me, &stack).unwrap().uses, 2);
        assert_eq!(locals.get(&B, 1, 0, me, &stack).unwrap().uses, 10);
        assert_eq!(
            locals.get(&A2, 1, 0, me, &stack).unwrap().binds,
            1,
            "bound once"
        );
    }
}

// The thread's stack bounds are looked up on Linux only (and not
// under Miri, which has no `pthread_getattr_np`).
#[cfg(all(target_os = "linux", not(miri)))]
#[test]
fn a_held_value_is_in_use_until_its_ref_drops_or_its_call_is_gone() {
    static KEY: LocalKey<Numbered<3>> = LocalKey::new();
    static OTHER: LocalKey<Numbered<4>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    // Three calls on this thread's stack: `calls[2]` the outermost,
    // `calls[0]` the deepest (an array's later elements are higher).
    let calls = [Anchor::new(), Anchor::new(), Anchor::new()];
    for (token, call) in (1..).zip(&calls) {
        call.mark(token);
    }
    // SAFETY: each anchor was marked above.
    let [deepest, nested, outer] = calls
        .each_ref()
        .map(|call| at(unsafe { call.holder_mark() }, 1, 0));
    // SAFETY: this thread owns `locals`; the refs of abandoned calls
    // are forgotten (their frames are "gone") before the values are
    // taken again.
    unsafe {
        let held = locals.get(&KEY, 1, 0, outer, &stack).unwrap();
        let message = locals
            .get(&KEY, 2, 0, nested, &stack)
            .err()
            .unwrap()
            .into_message();
        assert!(
            message.contains("already in use by an outer call"),
            "{message}"
        );
        // The holder asking again: a callback with two `#[local]`
        // parameters of one type under two names.
        let again = locals
            .get(&KEY, 1, 0, outer, &stack)
            .err()
            .unwrap()
            .into_message();
        assert!(again.contains("taken twice by one call"), "{again}");
        assert!(
            locals.get(&OTHER, 2, 0, nested, &stack).is_ok(),
            "another type is free"
        );
        drop(held);
        assert!(
            locals.get(&KEY, 2, 0, nested, &stack).is_ok(),
            "free again once dropped"
        );

        // Held by the nested call, which is then abandoned.
        core::mem::forget(locals.get(&KEY, 2, 0, nested, &stack).unwrap());
        assert!(
            locals.get(&KEY, 3, 0, deepest, &stack).is_err(),
            "below the holder with its token in place: it may be running"
        );
        let value = locals
            .get(&KEY, 1, 0, outer, &stack)
            .expect("a call above the holder on the thread's stack: the holder is gone");
        assert_eq!((value.binds, value.releases), (1, 0), "still bound, once");
        drop(value);

        // Held by the nested call again, whose frame is then reused.
        core::mem::forget(locals.get(&KEY, 2, 0, nested, &stack).unwrap());
        calls[1].mark(99);
        assert!(
            locals.get(&KEY, 3, 0, deepest, &stack).is_ok(),
            "its token was overwritten: the holder is gone"
        );
        let other = locals.get(&OTHER, 1, 0, outer, &stack).unwrap();
        assert_eq!(other.binds, 1, "freeing a held value keeps it bound");
    }
}

// The thread's stack bounds are looked up on Linux only (and not
// under Miri, which has no `pthread_getattr_np`).
#[cfg(all(target_os = "linux", not(miri)))]
#[test]
fn a_hold_below_an_outermost_call_that_is_over_is_stale() {
    static KEY: LocalKey<Numbered<12>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    // `calls[2]` the outermost call, `calls[1]` a call nested in it that
    // holds the value and is abandoned, `calls[0]` a call below both
    // (its token is not overwritten).
    let calls = [Anchor::new(), Anchor::new(), Anchor::new()];
    for (token, call) in (1..).zip(&calls) {
        call.mark(token);
    }
    // SAFETY: each anchor was marked above.
    let [deepest, nested, outer] = calls.each_ref().map(|call| unsafe { call.holder_mark() });
    let outer_address = outer.address();
    // SAFETY: this thread owns `locals`; the forgotten ref stands for
    // the abandoned call.
    unsafe {
        core::mem::forget(
            locals
                .get(&KEY, 2, 0, at(nested, 1, outer_address), &stack)
                .unwrap(),
        );
        assert!(
            locals
                .get(&KEY, 3, 0, at(deepest, 1, outer_address), &stack)
                .is_err(),
            "under the same outermost call, the holder may be running"
        );
        assert!(
            locals.get(&KEY, 3, 0, at(deepest, 2, 0), &stack).is_ok(),
            "under the next outermost call: the one it ran under is over"
        );
    }
    // Held the same way, but the outermost call ran on another stack:
    // its return alone does not tell (the holder may be suspended).
    let elsewhere = Box::new(Anchor::new());
    let elsewhere = elsewhere.mark(7).address();
    // SAFETY: as above.
    unsafe {
        core::mem::forget(
            locals
                .get(&KEY, 2, 0, at(nested, 3, elsewhere), &stack)
                .unwrap(),
        );
        assert!(locals.get(&KEY, 3, 0, at(deepest, 4, 0), &stack).is_err());
    }
}

#[cfg(not(target_os = "linux"))]
#[test]
fn without_the_stack_bounds_a_hold_is_kept_until_its_ref_drops() {
    static KEY: LocalKey<Numbered<13>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    let calls = [Anchor::new(), Anchor::new()];
    for (token, call) in (1..).zip(&calls) {
        call.mark(token);
    }
    // SAFETY: each anchor was marked above.
    let [nested, outer] = calls
        .each_ref()
        .map(|call| at(unsafe { call.holder_mark() }, 1, 0));
    // SAFETY: this thread owns `locals`; the forgotten ref stands for
    // an abandoned call.
    unsafe {
        core::mem::forget(locals.get(&KEY, 2, 0, nested, &stack).unwrap());
        calls[0].mark(99);
        assert!(
            locals
                .get(&KEY, 1, 0, at(outer.call, 2, 0), &stack)
                .is_err(),
            "neither its place nor its token can be trusted without the bounds"
        );
    }
}

#[test]
fn a_hold_on_another_stack_is_kept_until_its_ref_drops_or_all_are_freed() {
    static KEY: LocalKey<Numbered<9>> = LocalKey::new();
    static OTHER: LocalKey<Numbered<10>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    let caller = Anchor::new();
    caller.mark(1);
    // A call suspended on a coroutine stack: off the thread's stack.
    let elsewhere = Box::new(Anchor::new());
    elsewhere.mark(2);
    // SAFETY: both anchors were marked above.
    let (caller, suspended) = unsafe { (caller.holder_mark(), elsewhere.holder_mark()) };
    // Under an outermost call on this stack, which then returns.
    let outer = Anchor::new();
    let outer_address = outer.mark(9).address();
    let (caller, suspended) = (
        at(caller, 2, outer_address),
        at(suspended, 1, outer_address),
    );
    // SAFETY: this thread owns `locals`; the forgotten refs stand for a
    // suspended call and, at `release_all`, for calls that are gone.
    unsafe {
        let held = locals.get(&KEY, 2, 0, suspended, &stack).unwrap();
        elsewhere.mark(3);
        let message = locals
            .get(&KEY, 1, 0, caller, &stack)
            .err()
            .unwrap()
            .into_message();
        assert!(
            message.contains("already in use"),
            "a holder off the thread's stack is never taken for gone: {message}"
        );
        drop(held);
        assert!(
            locals.get(&KEY, 1, 0, caller, &stack).is_ok(),
            "free once its ref drops"
        );
        // `release_all` runs with no call: every hold is stale then.
        core::mem::forget(locals.get(&OTHER, 2, 0, suspended, &stack).unwrap());
        locals.release_all();
        assert!(!locals.has_values(), "the held value was released");
        let other = locals.get(&OTHER, 1, 0, caller, &stack).unwrap();
        assert_eq!((other.binds, other.releases), (2, 1));
    }
}

#[test]
fn a_hold_through_the_state_is_not_found_by_the_fast_path() {
    static KEY: LocalKey<Numbered<11>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    let call = Anchor::new();
    call.mark(1);
    // SAFETY: marked above.
    let me = at(unsafe { call.holder_mark() }, 1, 0);
    // SAFETY: this thread owns `locals`; the ref is dropped at the end.
    unsafe {
        drop(locals.get(&KEY, 1, 0, me, &stack).unwrap());
        assert!(locals.get_ready(&KEY).is_some(), "bound and free");
        assert!(locals.get_ready(&KEY).is_some(), "remembered");
        // A call the runtime may no longer record holds it (suspended
        // on another stack): an idle context's next call must not get
        // it.
        let held = locals.get(&KEY, 2, 0, me, &stack).unwrap();
        assert!(locals.get_ready(&KEY).is_none(), "held, so not ready");
        drop(held);
        assert!(locals.get_ready(&KEY).is_some(), "ready once its ref drops");
    }
}

#[test]
fn a_released_value_is_not_found_ready_although_it_was_the_last_one() {
    static KEY: LocalKey<Numbered<7>> = LocalKey::new();
    static OTHER: LocalKey<Numbered<8>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    let call = Anchor::new();
    call.mark(1);
    // SAFETY: marked above.
    let me = at(unsafe { call.holder_mark() }, 1, 0);
    // SAFETY: this thread owns `locals`, and no call runs on it between
    // the lookups (each `LocalRef` is dropped at once).
    unsafe {
        assert!(locals.get_ready(&KEY).is_none(), "no value yet");
        drop(locals.get(&KEY, 1, 0, me, &stack).unwrap());
        drop(locals.get(&OTHER, 1, 0, me, &stack).unwrap());
        let (entry, value) = locals.get_ready(&KEY).expect("bound and free");
        let index = held_in(entry);
        assert_ne!(index, 0, "an index is assigned");
        assert_eq!((*value).binds, 1);
        // While the outermost call holds it through the entry word, a
        // nested call is refused it, though its state says `READY`.
        let message = locals
            .get(&KEY, 2, index, me, &stack)
            .err()
            .unwrap()
            .into_message();
        assert!(message.contains("already in use"), "{message}");
        assert!(
            locals.get(&OTHER, 2, index, me, &stack).is_ok(),
            "another type is free"
        );
        assert_eq!(locals.get_ready(&KEY).expect("remembered").0, entry);
        locals.release_all();
        assert!(
            locals.get_ready(&KEY).is_none(),
            "released, so not ready, although it was the last one found"
        );
        drop(locals.get(&KEY, 1, 0, me, &stack).unwrap());
        let (_, value) = locals.get_ready(&KEY).expect("bound again");
        assert_eq!(((*value).binds, (*value).releases), (2, 1));
        // Another type's lookup replaces the remembered one.
        drop(locals.get(&OTHER, 1, 0, me, &stack).unwrap());
        let (_, other) = locals.get_ready(&OTHER).expect("bound again");
        assert_eq!(((*other).binds, (*other).releases), (2, 1));
    }
}

#[test]
fn release_all_releases_bound_values_once_and_the_next_use_binds_again() {
    static A: LocalKey<Numbered<5>> = LocalKey::new();
    static B: LocalKey<Numbered<6>> = LocalKey::new();
    let locals = Locals::new();
    let stack = ThreadStack::new();
    let call = Anchor::new();
    call.mark(1);
    // SAFETY: marked above.
    let me = at(unsafe { call.holder_mark() }, 1, 0);
    // SAFETY: this thread owns `locals`; no `LocalRef` is alive across
    // `release_all`.
    unsafe {
        assert!(!locals.has_values());
        drop(locals.get(&A, 1, 0, me, &stack).unwrap());
        assert!(locals.has_values());
        locals.release_all();
        assert!(!locals.has_values(), "nothing is bound after release_all");
        locals.release_all();
        let a = locals.get(&A, 1, 0, me, &stack).unwrap();
        assert_eq!((a.binds, a.releases), (2, 1));
        drop(a);
        // `B` was never used: it has no value to release.
        drop(locals.get(&B, 1, 0, me, &stack).unwrap());
        let b = locals.get(&B, 1, 0, me, &stack).unwrap();
        assert_eq!((b.binds, b.releases), (1, 0));
    }
}
