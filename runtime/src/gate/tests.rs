use super::*;

/// A gate with `foreground` and `background` inits pending.
fn pending(foreground: u32, background: u32) -> Gate {
    let gate = Gate::new();
    for _ in 0..foreground {
        gate.arm(InitKind::Foreground);
    }
    for _ in 0..background {
        gate.arm(InitKind::Background);
    }
    gate
}

fn orphaned(gate: &Gate) -> bool {
    gate.state() == InitState::Failed(ORPHANED.to_owned())
}

#[test]
fn the_counts_of_both_kinds_hold_the_gate() {
    let gate = pending(2, 1);
    gate.finish(InitKind::Foreground, Ok(()));
    gate.finish(InitKind::Background, Ok(()));
    assert_eq!(gate.state(), InitState::Pending);
    gate.finish(InitKind::Foreground, Ok(()));
    assert_eq!(gate.state(), InitState::Ready);
    assert!(gate.is_ready());
}

#[test]
fn a_child_of_the_loader_keeps_its_foreground_inits() {
    let gate = pending(2, 0);
    gate.after_fork(true, false);
    assert_eq!(gate.state(), InitState::Pending);
}

#[test]
fn a_child_of_another_thread_loses_the_foreground_inits() {
    let gate = pending(1, 0);
    gate.after_fork(false, false);
    assert!(orphaned(&gate));
}

#[test]
fn a_child_loses_the_background_inits_of_other_threads() {
    // Forked by the loader while a background init runs elsewhere.
    let gate = pending(1, 1);
    gate.after_fork(true, false);
    assert!(orphaned(&gate));
    // Forked by one of two background inits.
    let gate = pending(0, 2);
    gate.after_fork(false, true);
    assert!(orphaned(&gate));
}

#[test]
fn a_child_of_the_one_background_init_keeps_it() {
    let gate = pending(0, 1);
    gate.after_fork(false, true);
    assert_eq!(gate.state(), InitState::Pending);
}

#[test]
fn a_child_of_an_open_gate_stays_open() {
    let gate = pending(0, 0);
    gate.after_fork(false, false);
    assert_eq!(gate.state(), InitState::Ready);
}
