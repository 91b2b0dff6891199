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
    crate::thread::handle_fork();
    GATE.arm();
    if !background {
        run(name, init);
        return;
    }
    if let Err(error) = spawn_detached(Box::new(move || run(name, init))) {
        GATE.finish(Err(format!("`{name}` could not start its thread: {error}")));
    }
}

/// Starts `task` on a detached thread of its own.
///
/// `pthread_create` directly rather than `std::thread`: spawning through std
/// registers a thread-local destructor on the *calling* thread (the one
/// running `dlopen`), and glibc keeps a library loaded while such a
/// destructor is pending, so `dlclose` could never unload it.
#[cfg(unix)]
fn spawn_detached(task: Box<dyn FnOnce() + Send>) -> Result<(), std::io::Error> {
    use core::ffi::c_void;

    extern "C" fn start(arg: *mut c_void) -> *mut c_void {
        // SAFETY: `arg` is the `Box<Box<dyn FnOnce>>` leaked below, handed to
        // exactly one thread.
        let task = unsafe { Box::from_raw(arg.cast::<Box<dyn FnOnce() + Send>>()) };
        task();
        core::ptr::null_mut()
    }

    let arg = Box::into_raw(Box::new(task)).cast::<c_void>();
    let mut attr = core::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `attr` is a valid out-pointer, initialised before use and
    // destroyed after; `start` has the signature pthread_create expects and
    // takes ownership of `arg` only if the thread starts.
    let rc = unsafe {
        let rc = libc::pthread_attr_init(attr.as_mut_ptr());
        debug_assert_eq!(rc, 0);
        let rc =
            libc::pthread_attr_setdetachstate(attr.as_mut_ptr(), libc::PTHREAD_CREATE_DETACHED);
        debug_assert_eq!(rc, 0);
        let mut thread = core::mem::MaybeUninit::<libc::pthread_t>::uninit();
        let rc = libc::pthread_create(thread.as_mut_ptr(), attr.as_ptr(), start, arg);
        libc::pthread_attr_destroy(attr.as_mut_ptr());
        rc
    };
    if rc != 0 {
        // SAFETY: the thread did not start, so `arg` is still ours.
        drop(unsafe { Box::from_raw(arg.cast::<Box<dyn FnOnce() + Send>>()) });
        return Err(std::io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

#[cfg(not(unix))]
fn spawn_detached(task: Box<dyn FnOnce() + Send>) -> Result<(), std::io::Error> {
    std::thread::Builder::new()
        .name("callgate-init".into())
        .spawn(task)
        .map(drop)
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

/// In a `fork` child: an init that was running on another thread of the
/// parent will never finish here, so the gate fails instead of making every
/// callback wait forever. (An init running on the forking thread itself
/// goes on in the child.)
pub(crate) fn after_fork_in_child() {
    if !IN_INIT.with(Cell::get) {
        GATE.orphan();
    }
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
