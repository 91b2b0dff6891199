//! `#[callgate::init]`: library initialisation run at load time, and the
//! gate callbacks pass before they run.

use core::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::boundary::{Failure, payload_message};
use crate::gate::{Closed, Gate, GatePolicy, InitState};
use crate::stats;

pub(crate) static GATE: Gate = Gate::new();

thread_local! {
    /// This thread is running init code: its callbacks never wait.
    static IN_INIT: Cell<bool> = const { Cell::new(false) };
}

/// Where the library's initialisation stands.
///
/// `Ready` for a library without `#[callgate::init]`; `Pending` while an init
/// runs; `Failed` with the message once an init returned `Err` or panicked.
pub fn init_state() -> InitState {
    GATE.state()
}

/// Runs one `#[callgate::init]` function; called from a load-time
/// constructor. The gate is armed before this returns, so a callback made
/// after the library is loaded waits for a background init.
pub fn run_init(name: &'static str, background: bool, init: fn() -> Result<(), Failure>) {
    GATE.arm();
    if !background {
        run(name, init);
        return;
    }
    let spawned = std::thread::Builder::new()
        .name(format!("callgate-init-{name}"))
        .spawn(move || run(name, init));
    if let Err(error) = spawned {
        GATE.finish(Err(format!("`{name}` could not start its thread: {error}")));
    }
}

fn run(name: &'static str, init: fn() -> Result<(), Failure>) {
    let outer = IN_INIT.with(|flag| flag.replace(true));
    let outcome = match catch_unwind(AssertUnwindSafe(init)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(failure)) => Err(format!("`{name}`: {}", failure.message())),
        Err(payload) => Err(format!("`{name}` panicked: {}", payload_message(payload))),
    };
    IN_INIT.with(|flag| flag.set(outer));
    GATE.finish(outcome);
}

/// The gate's slow path: init code passes at once, others wait or fail.
#[cold]
#[inline(never)]
pub(crate) fn pass_gate_slow(policy: GatePolicy) -> Result<(), Closed> {
    if IN_INIT.with(Cell::get) {
        return Ok(());
    }
    GATE.pass_slow(policy, stats::record_gate_wait)
}
