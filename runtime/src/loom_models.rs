//! loom models of the gate, the free list, the closures' turns and the
//! hazard words.
//!
//! Run with:
//! `RUSTFLAGS="--cfg callgate_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p callgate --lib --release`

use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::thread;

use crate::freelist::{FreeList, Item};
use crate::gate::{Closed, Gate, GatePolicy, InitKind, InitState};
use crate::sync::{Hazard, Retirement, Turn};

#[test]
fn gate_releases_every_waiter_after_the_last_init() {
    loom::model(|| {
        let gate = Arc::new(Gate::new());
        let data = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        // One of each kind: the gate opens when both counts are zero.
        let kinds = [InitKind::Foreground, InitKind::Background];
        for kind in kinds {
            gate.arm(kind);
        }
        let inits: Vec<_> = kinds
            .into_iter()
            .map(|kind| {
                let (gate, data) = (gate.clone(), data.clone());
                thread::spawn(move || {
                    data.fetch_add(1, Ordering::Relaxed);
                    gate.finish(kind, Ok(()));
                })
            })
            .collect();
        let waiter = {
            let (gate, data) = (gate.clone(), data.clone());
            thread::spawn(move || {
                if !gate.is_ready() {
                    gate.pass_slow(GatePolicy::Wait, || (), || ()).unwrap();
                }
                // Both inits' writes are visible once the gate is passed.
                assert_eq!(data.load(Ordering::Relaxed), 2);
            })
        };
        for init in inits {
            init.join().unwrap();
        }
        waiter.join().unwrap();
        assert!(gate.is_ready());
        assert_eq!(gate.state(), InitState::Ready);
    });
}

#[test]
fn gate_reports_a_failed_init_to_waiters() {
    loom::model(|| {
        let gate = Arc::new(Gate::new());
        gate.arm(InitKind::Background);
        let init = {
            let gate = gate.clone();
            thread::spawn(move || gate.finish(InitKind::Background, Err("boom".to_owned())))
        };
        let outcome = if gate.is_ready() {
            Ok(())
        } else {
            gate.pass_slow(GatePolicy::Wait, || (), || ())
        };
        assert_eq!(outcome, Err(Closed::Failed("boom".to_owned())));
        init.join().unwrap();
        assert!(!gate.is_ready());
    });
}

#[test]
fn gate_fail_policy_never_blocks() {
    loom::model(|| {
        let gate = Arc::new(Gate::new());
        gate.arm(InitKind::Foreground);
        let init = {
            let gate = gate.clone();
            thread::spawn(move || gate.finish(InitKind::Foreground, Ok(())))
        };
        let outcome = if gate.is_ready() {
            Ok(())
        } else {
            gate.pass_slow(GatePolicy::Fail, || (), || ())
        };
        assert!(matches!(outcome, Ok(()) | Err(Closed::Pending)));
        init.join().unwrap();
    });
}

#[test]
fn free_list_never_hands_out_a_node_twice() {
    loom::model(|| {
        let list: Arc<FreeList<Item<AtomicBool>>> = Arc::new(FreeList::new());
        for _ in 0..2 {
            let node = list.alloc(Item::new(AtomicBool::new(false)));
            // SAFETY: just allocated, pushed once, not used afterwards.
            unsafe { list.push(node) };
        }
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let list = list.clone();
                thread::spawn(move || {
                    for _ in 0..2 {
                        let node = list
                            .pop()
                            .unwrap_or_else(|| list.alloc(Item::new(AtomicBool::new(false))));
                        assert!(
                            !node.value.swap(true, Ordering::Relaxed),
                            "node handed out twice"
                        );
                        node.value.store(false, Ordering::Relaxed);
                        // SAFETY: popped or allocated above by this thread,
                        // pushed once, not used afterwards.
                        unsafe { list.push(node) };
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(list.free(), list.allocated());
        assert_drains_to_distinct_nodes(&list, list.allocated());
    });
}

/// Pops everything: a corrupted list (a cycle, a lost or duplicated node)
/// shows up as a repeated node or a wrong count.
fn assert_drains_to_distinct_nodes(list: &FreeList<Item<AtomicBool>>, expected: usize) {
    let mut seen = Vec::new();
    while let Some(node) = list.pop() {
        let address = node as *const _ as usize;
        assert!(!seen.contains(&address), "free list hands out a node twice");
        seen.push(address);
        assert!(
            seen.len() <= expected,
            "free list holds more nodes than exist"
        );
    }
    assert_eq!(seen.len(), expected, "free list lost a node");
}

#[test]
fn free_list_survives_the_aba_interleaving() {
    // One thread pops while the other pops twice and pushes the first node
    // back: the tag must make the stale pop retry.
    loom::model(|| {
        let list: Arc<FreeList<Item<AtomicBool>>> = Arc::new(FreeList::new());
        for _ in 0..3 {
            let node = list.alloc(Item::new(AtomicBool::new(false)));
            // SAFETY: just allocated, pushed once, not used afterwards.
            unsafe { list.push(node) };
        }
        let other = {
            let list = list.clone();
            thread::spawn(move || {
                let a = list.pop().unwrap();
                let b = list.pop().unwrap();
                assert!(!a.value.swap(true, Ordering::Relaxed));
                assert!(!b.value.swap(true, Ordering::Relaxed));
                a.value.store(false, Ordering::Relaxed);
                // SAFETY: popped above by this thread, pushed once, not used
                // afterwards.
                unsafe { list.push(a) };
                b.value.store(false, Ordering::Relaxed);
                // SAFETY: as for `a`.
                unsafe { list.push(b) };
            })
        };
        if let Some(node) = list.pop() {
            assert!(
                !node.value.swap(true, Ordering::Relaxed),
                "node handed out twice"
            );
            node.value.store(false, Ordering::Relaxed);
            // SAFETY: popped above by this thread, pushed once, not used
            // afterwards.
            unsafe { list.push(node) };
        }
        other.join().unwrap();
        assert_eq!(list.free(), 3);
        assert_drains_to_distinct_nodes(&list, 3);
    });
}

/// Takes the turn as a `Closure::new` call does: on the straight line if
/// free (`try_begin`), else by the slow path. `Some(straight)` once taken,
/// `None` if retired.
fn take(turn: &Turn, me: usize) -> Option<bool> {
    match turn.try_begin(me) {
        Ok(()) => Some(true),
        Err(held) => turn
            .begin_slow(me, held, || false, || (), || (), || ())
            .ok()
            .map(|()| false),
    }
}

/// Ends a turn [`take`] took (`end_begun` after `try_begin`); true when the
/// object is the caller's to let go.
///
/// # Safety
///
/// `take` returned `Some(straight)` on this thread, and the turn has not
/// ended since.
unsafe fn end(turn: &Turn, straight: bool) -> bool {
    if straight {
        // SAFETY: taken by `try_begin` (caller obligation).
        unsafe { turn.end_begun() }
    } else {
        // SAFETY: taken by `begin_slow` (caller obligation).
        unsafe { turn.end() }
    }
}

/// Three threads take a turn each; `annotated`: the turns as under
/// valgrind, through the slow paths.
fn take_turns(annotated: bool) {
    loom::model(move || {
        let turn = Arc::new(Turn::announced(annotated));
        let count = Arc::new(loom::cell::UnsafeCell::new(0_u32));
        let others: Vec<_> = [16_usize, 32]
            .into_iter()
            .map(|me| {
                let (turn, count) = (turn.clone(), count.clone());
                thread::spawn(move || {
                    let straight = take(&turn, me).unwrap();
                    // SAFETY: during this thread's turn (loom reports any
                    // access that races with it).
                    count.with_mut(|count| unsafe { *count += 1 });
                    // SAFETY: this thread's `take` returned it.
                    assert!(!unsafe { end(&turn, straight) });
                })
            })
            .collect();
        let straight = take(&turn, 48).unwrap();
        // SAFETY: as above.
        count.with_mut(|count| unsafe { *count += 1 });
        // SAFETY: as above.
        assert!(!unsafe { end(&turn, straight) });
        // A lost wake-up would leave a thread waiting: loom reports the
        // deadlock.
        for other in others {
            other.join().unwrap();
        }
        // SAFETY: every turn has ended and its thread been joined.
        assert_eq!(count.with(|count| unsafe { *count }), 3);
    });
}

#[test]
fn turns_exclude_each_other_and_wake_every_waiter() {
    take_turns(false);
}

#[test]
fn annotated_turns_exclude_each_other_and_wake_every_waiter() {
    take_turns(true);
}

/// A thread takes a turn and uses the object while another retires it:
/// exactly one of them lets it go (the retirement if the turn was free or
/// ended, else the turn's end), after the use (loom reports a use that
/// races with the letting go).
#[test]
fn a_retired_turn_outlives_the_call_holding_it() {
    loom::model(|| {
        let turn = Arc::new(Turn::announced(false));
        let object = Arc::new(loom::cell::UnsafeCell::new(0_u32));
        let gone = Arc::new(AtomicU32::new(0));
        let holder = {
            let (turn, object, gone) = (turn.clone(), object.clone(), gone.clone());
            thread::spawn(move || {
                let Some(straight) = take(&turn, 16) else {
                    return; // retired first: a call after the drop
                };
                // SAFETY: during this thread's turn.
                object.with_mut(|value| unsafe { *value += 1 });
                // SAFETY: this thread's `take` returned it.
                if unsafe { end(&turn, straight) } {
                    // SAFETY: the object is this thread's to let go.
                    object.with_mut(|value| unsafe { *value = u32::MAX });
                    gone.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // SAFETY: once, with no call waiting.
        if unsafe { turn.retire() } {
            // SAFETY: the object is this thread's to let go.
            object.with_mut(|value| unsafe { *value = u32::MAX });
            gone.fetch_add(1, Ordering::Relaxed);
        }
        holder.join().unwrap();
        assert_eq!(gone.load(Ordering::Relaxed), 1);
    });
}

/// Two threads announce an object and use it while a third retires it:
/// the object is destroyed once, after both uses (loom reports a use that
/// races with the destruction). The second holder then announces another
/// object through its word, which the retirement may read instead of the
/// withdrawn one.
#[test]
fn a_retired_object_outlives_the_calls_announcing_it() {
    const OBJECT: usize = 0x1000;
    const OTHER: usize = 0x2000;
    loom::model(|| {
        let hazards = Arc::new([Hazard::new(), Hazard::new()]);
        let retirement = Arc::new(Retirement::new());
        // The object: its contents, and how often it was destroyed.
        let object = Arc::new(loom::cell::UnsafeCell::new(7_u32));
        let destroyed = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let inside = Arc::new([AtomicBool::new(false), AtomicBool::new(false)]);
        let destroy = {
            let (object, destroyed) = (object.clone(), destroyed.clone());
            move || {
                // SAFETY: loom reports any access racing with this one.
                object.with_mut(|value| unsafe { *value = 0 });
                destroyed.fetch_add(1, Ordering::Relaxed);
            }
        };
        let holders: Vec<_> = (0..2)
            .map(|i| {
                let (hazards, retirement, object, inside, destroy) = (
                    hazards.clone(),
                    retirement.clone(),
                    object.clone(),
                    inside.clone(),
                    destroy.clone(),
                );
                thread::spawn(move || {
                    // SAFETY: thread `i` owns word `i`, and announces before
                    // the retirement starts (it waits for `inside`).
                    assert!(unsafe { hazards[i].announce(OBJECT, 0) });
                    inside[i].store(true, Ordering::Release);
                    // SAFETY: announced (loom checks the claim).
                    assert_eq!(object.with(|value| unsafe { *value }), 7);
                    // SAFETY: this thread's word, its use is over.
                    let withdrawn = unsafe { hazards[i].withdraw() };
                    assert_eq!(Hazard::object(withdrawn), OBJECT);
                    // SAFETY: deferred to, released once.
                    if Hazard::deferred(withdrawn) && unsafe { retirement.release() } {
                        destroy();
                    }
                    if i == 1 {
                        // SAFETY: this thread's word, free again.
                        unsafe {
                            assert!(hazards[i].announce(OTHER, 0));
                            assert_eq!(hazards[i].withdraw(), OTHER);
                        }
                    }
                })
            })
            .collect();
        // The owner lets go once both calls are inside (as C would, having
        // heard from them).
        for flag in inside.iter() {
            while !flag.load(Ordering::Acquire) {
                thread::yield_now();
            }
        }
        // SAFETY: retired once; every word is in `hazards`.
        if unsafe { retirement.retire(OBJECT, hazards.iter()) } {
            destroy();
        }
        for holder in holders {
            holder.join().unwrap();
        }
        assert_eq!(destroyed.load(Ordering::Relaxed), 1);
    });
}
