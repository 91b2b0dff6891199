use super::Turn;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, Ordering};

/// The errors the tests ask `begin` for.
#[derive(Debug, PartialEq, Eq)]
enum Error {
    HeldByCaller,
    Retired,
}

/// How a `begin` went.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    /// The turn was free, or handed on.
    Anew,
    /// Held under the asking mark, and taken back (`take_back` said so).
    Back,
    /// Held under the asking mark, and refused.
    Refused,
    /// Retired.
    Retired,
}

/// Asks for the turn under `me`; `holder_gone` is what `take_back`
/// answers if asked.
fn ask(turn: &Turn, me: usize, holder_gone: bool) -> Asked {
    let asked = Cell::new(false);
    let take_back = || {
        asked.set(true);
        holder_gone
    };
    match turn.begin(me, take_back, || Error::HeldByCaller, || Error::Retired) {
        Ok(()) if asked.get() => Asked::Back,
        Ok(()) => Asked::Anew,
        Err(Error::HeldByCaller) => Asked::Refused,
        Err(Error::Retired) => Asked::Retired,
    }
}

/// What the turns guard in the test: a count that a data race would
/// lose increments of, and a flag that catches two holders at once.
struct Guarded {
    turn: Turn,
    inside: AtomicBool,
    count: UnsafeCell<u64>,
}

// SAFETY: `count` is reached only during a turn (the test's threads
// below).
unsafe impl Sync for Guarded {}

fn contend(annotated: bool) {
    const THREADS: usize = 4;
    // Fewer under Miri, which interprets every access.
    const TURNS: u64 = if cfg!(miri) { 500 } else { 20_000 };
    let guarded = Guarded {
        turn: Turn::announced(annotated),
        inside: AtomicBool::new(false),
        count: UnsafeCell::new(0),
    };
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let guarded = &guarded;
            scope.spawn(move || {
                let me = (thread + 1) * 16;
                for _ in 0..TURNS {
                    guarded
                        .turn
                        .begin(me, || false, || Error::HeldByCaller, || Error::Retired)
                        .unwrap();
                    assert!(!guarded.inside.swap(true, Ordering::Relaxed), "two holders");
                    // SAFETY: during this thread's turn.
                    unsafe { *guarded.count.get() += 1 };
                    guarded.inside.store(false, Ordering::Relaxed);
                    // SAFETY: this thread's `begin` returned `Ok`.
                    assert!(!unsafe { guarded.turn.end() });
                }
            });
        }
    });
    assert_eq!(guarded.count.into_inner(), THREADS as u64 * TURNS);
}

#[test]
fn turns_exclude_each_other_under_contention() {
    contend(false);
}

#[test]
fn annotated_turns_exclude_each_other_under_contention() {
    contend(true);
}

/// With the turn held under mark 16: a thread (mark 32) waits for it
/// while `then` runs on this thread, which must end the turn; the
/// waiter then takes and ends a turn of its own.
fn while_a_thread_waits(turn: &Turn, then: impl FnOnce()) {
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            assert_eq!(ask(turn, 32, true), Asked::Anew);
            // SAFETY: this thread's `begin` returned `Ok`.
            assert!(!unsafe { turn.end() });
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!waiter.is_finished(), "the waiter took a held turn");
        then();
    });
    assert_eq!(ask(turn, 16, false), Asked::Anew);
    // SAFETY: this thread's `begin` returned `Ok`.
    assert!(!unsafe { turn.end() });
}

fn ask_again(annotated: bool) {
    let turn = Turn::announced(annotated);
    assert_eq!(ask(&turn, 16, false), Asked::Anew);
    assert_eq!(ask(&turn, 16, false), Asked::Refused);
    // Still the holder's: another thread waits until it ends.
    while_a_thread_waits(&turn, || {
        // SAFETY: this thread's first `begin(16)` returned `Ok`.
        assert!(!unsafe { turn.end() });
    });
}

#[test]
fn a_turn_asked_for_again_by_its_holder_is_an_error() {
    ask_again(false);
}

#[test]
fn an_annotated_turn_asked_for_again_by_its_holder_is_an_error() {
    ask_again(true);
}

/// A turn whose holder is gone (its call abandoned) is taken back by
/// the next call under its mark that knows so, and a thread waiting
/// for it is woken when that call ends its turn.
fn take_back(annotated: bool) {
    let turn = Turn::announced(annotated);
    // The call that takes the turn is then abandoned: no `end`.
    assert_eq!(ask(&turn, 16, true), Asked::Anew);
    while_a_thread_waits(&turn, || {
        // A call nested in a running one of the same thread must not
        // take it back.
        assert_eq!(ask(&turn, 16, false), Asked::Refused);
        assert_eq!(ask(&turn, 16, true), Asked::Back);
        // SAFETY: this thread's `begin` returned `Ok`.
        assert!(!unsafe { turn.end() });
    });
}

/// A call of the holder's thread that interrupted the call taking the
/// turn back (a signal handler's) took it back first and ended it: the
/// interrupted call takes the turn as a free one.
fn taken_back_meanwhile(annotated: bool) {
    let turn = Turn::announced(annotated);
    // The call that takes the turn is then abandoned: no `end`.
    assert_eq!(ask(&turn, 16, true), Asked::Anew);
    let take_back = || {
        assert_eq!(ask(&turn, 16, true), Asked::Back, "the interrupting call");
        // SAFETY: the interrupting call's `begin` returned `Ok`.
        assert!(!unsafe { turn.end() });
        true
    };
    assert_eq!(
        turn.begin(16, take_back, || Error::HeldByCaller, || Error::Retired),
        Ok(())
    );
    while_a_thread_waits(&turn, || {
        // SAFETY: this thread's `begin` returned `Ok`.
        assert!(!unsafe { turn.end() });
    });
}

#[test]
fn a_turn_taken_back_by_an_interrupting_call_is_taken_back_once() {
    taken_back_meanwhile(false);
}

#[test]
fn an_annotated_turn_taken_back_by_an_interrupting_call_is_taken_back_once() {
    taken_back_meanwhile(true);
}

/// A call that waits for the turn notes so until it has it; its taking
/// shows in the turn's state by then. A call that does not wait notes
/// nothing.
#[cfg(unix)]
#[test]
fn a_waiting_call_notes_its_wait_until_it_has_the_turn() {
    /// Set when the note is dropped, which checks the turn's state.
    struct Note<'a>(&'a Turn, &'a AtomicBool);
    impl Drop for Note<'_> {
        fn drop(&mut self) {
            assert!(self.0.is_held_under(32), "the turn is the waiter's");
            self.1.store(true, Ordering::SeqCst);
        }
    }
    let turn = Turn::announced(false);
    let noted = AtomicBool::new(false);
    let dropped = AtomicBool::new(false);
    let not_waiting = || -> Note<'_> { panic!("noted a wait for a free turn") };
    turn.begin_noting_wait(
        16,
        || false,
        not_waiting,
        || Error::HeldByCaller,
        || Error::Retired,
    )
    .unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let waiting = || {
                noted.store(true, Ordering::SeqCst);
                Note(&turn, &dropped)
            };
            turn.begin_noting_wait(
                32,
                || false,
                waiting,
                || Error::HeldByCaller,
                || Error::Retired,
            )
            .unwrap();
            assert!(
                dropped.load(Ordering::SeqCst),
                "the note lasted past the wait"
            );
            // SAFETY: this thread's `begin_noting_wait` returned `Ok`.
            assert!(!unsafe { turn.end() });
        });
        while !noted.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        assert!(!dropped.load(Ordering::SeqCst));
        assert!(turn.is_held_under(16));
        // SAFETY: this thread's `begin_noting_wait` returned `Ok`.
        assert!(!unsafe { turn.end() });
    });
    assert!(turn.is_held_under(0), "free");
}

#[test]
fn a_turn_left_by_a_call_that_is_gone_is_taken_back() {
    take_back(false);
}

#[test]
fn an_annotated_turn_left_by_a_call_that_is_gone_is_taken_back() {
    take_back(true);
}

/// A free turn retired lets its object go at once; one held lets it go
/// at its end; a turn asked for after either is an error, also for a
/// call that waited for it.
fn retire(annotated: bool) {
    let turn = Turn::announced(annotated);
    // SAFETY: once.
    assert!(unsafe { turn.retire() }, "free: gone now");
    assert_eq!(ask(&turn, 16, false), Asked::Retired);

    let turn = Turn::announced(annotated);
    assert_eq!(ask(&turn, 16, false), Asked::Anew);
    // SAFETY: once; no call waits.
    assert!(!unsafe { turn.retire() }, "held: gone at its end");
    // A call after the retirement (C's use after free) waits, then fails.
    std::thread::scope(|scope| {
        let late = scope.spawn(|| ask(&turn, 32, false));
        std::thread::sleep(std::time::Duration::from_millis(20));
        // SAFETY: this thread's `begin` returned `Ok`.
        assert!(unsafe { turn.end() }, "the holder lets it go");
        assert_eq!(late.join().unwrap(), Asked::Retired);
    });
    assert_eq!(ask(&turn, 16, false), Asked::Retired);
}

#[test]
fn a_retired_turn_lets_its_object_go_once_and_gives_no_more_turns() {
    retire(false);
}

#[test]
fn an_annotated_retired_turn_lets_its_object_go_once_and_gives_no_more_turns() {
    retire(true);
}

/// A turn `try_begin` took and `end_begun` ended, as a `Closure::new`
/// call's straight line takes and ends it: a thread waiting for it gets
/// it; retired while held, its end lets the object go. An annotated turn
/// is never taken that way (its slow path tells helgrind).
#[test]
fn a_turn_begun_on_the_straight_line_wakes_its_waiter_and_reports_its_retirement() {
    assert!(Turn::announced(true).try_begin(16).is_err());
    let turn = Turn::announced(false);
    assert_eq!(turn.try_begin(16), Ok(()));
    while_a_thread_waits(&turn, || {
        // SAFETY: taken by this thread's `try_begin`.
        assert!(!unsafe { turn.end_begun() });
    });
    assert_eq!(turn.try_begin(16), Ok(()));
    // SAFETY: once; no call waits.
    assert!(!unsafe { turn.retire() }, "held: gone at its end");
    // SAFETY: taken by this thread's `try_begin`.
    assert!(unsafe { turn.end_begun() }, "the holder lets it go");
    assert_eq!(ask(&turn, 16, false), Asked::Retired);
}
