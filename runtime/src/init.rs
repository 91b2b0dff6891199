//! `#[callgate::init]`: library initialisation run at load time, and the
//! gate callbacks pass before they run.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::failure::{Failure, payload_message};
use crate::gate::{Closed, Gate, GatePolicy, InitKind, InitState};
use crate::sync::{AtomicBool, AtomicUsize, Ordering};
use crate::thread::id as thread_id;
use crate::tls::FastGate;
use crate::{diag, hooks, stats};

pub(crate) static GATE: Gate = Gate::new();

const MAX_RUNNING_INITS: usize = 16;

/// The threads running init code (`thread::id`, 0 for free): their calls
/// pass the gate. Not a thread-local, to keep the library's thread-locals
/// within 16 bytes.
static INIT_THREADS: [AtomicUsize; MAX_RUNNING_INITS] =
    [const { AtomicUsize::new(0) }; MAX_RUNNING_INITS];

/// The thread that armed the last init: the loading thread, which runs
/// the foreground inits (and goes on with them in a `fork` child).
#[cfg(unix)]
static LOADER: AtomicUsize = AtomicUsize::new(0);

/// True while the calling thread runs init code.
fn in_init() -> bool {
    let id = thread_id();
    // Relaxed: a thread finds only its own entry, which only it writes.
    INIT_THREADS
        .iter()
        .any(|entry| entry.load(Ordering::Relaxed) == id)
}

/// Marks the calling thread as running init code; `None` if it already
/// was.
fn enter_init() -> Option<&'static AtomicUsize> {
    if in_init() {
        return None;
    }
    let id = thread_id();
    // Relaxed: only this thread reads its entry back.
    let entry = INIT_THREADS.iter().find(|entry| {
        entry
            .compare_exchange(0, id, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    });
    if entry.is_none() {
        diag::abort_with("callgate: more than 16 inits of one library run at once; aborting");
    }
    entry
}

/// Where the library's initialisation stands.
///
/// `Ready` for a library without `#[callgate::init]`; `Pending` while an init
/// runs; `Failed` with the message once an init returned `Err` or panicked.
///
/// On Windows this first starts the inits deferred past the loader lock
/// (see `#[callgate::init]`), as a callback would: a foreground init has
/// finished when it returns.
pub fn init_state() -> InitState {
    if !GATE.is_ready() {
        start_deferred();
    }
    GATE.state()
}

/// Arms the gate for one `#[callgate::init]` function; called from a
/// load-time constructor that runs before every init of the library starts
/// (on ELF, one in `.init_array.00101`, ahead of the plain `.init_array`
/// that holds [`start_init`]'s), so that no callback finds the gate open
/// between two inits: once the first init finishes, the second is already
/// counted.
pub fn arm_init(background: bool) {
    hooks::handle_fork();
    // Relaxed: read only in a `fork` child, by its one thread, which is
    // this one or was ordered after it by whatever made it fork.
    #[cfg(unix)]
    LOADER.store(thread_id(), Ordering::Relaxed);
    GATE.arm(InitKind::of(background));
    // After arming: a call that opens the fast path from now on re-checks
    // the gate and sees it armed (`open_fast_path`).
    FastGate::close();
}

/// Starts one `#[callgate::init]` function, armed by [`arm_init`]; called
/// from a load-time constructor.
///
/// On Windows the constructor runs inside `DllMain`, under the loader lock,
/// where starting a thread and waiting for it deadlocks: there it only
/// records the init, which the first call that finds the gate closed
/// starts (`start_deferred`).
///
/// # Safety
///
/// [`arm_init`] was called once for this init, with the same `background`,
/// and this is the only start of it: each start finishes its arming once,
/// and a start without one would open the gate while another init runs
/// (or underflow its count).
pub unsafe fn start_init(name: &'static str, background: bool, init: fn() -> Result<(), Failure>) {
    if cfg!(windows) {
        deferred::defer(name, background, init);
    } else {
        start(name, background, init);
    }
}

/// Arms the gate for one `#[callgate::init]` function and starts it; called
/// from a load-time constructor where the target has no earlier one to arm
/// it (see [`arm_init`]). The gate is armed before this returns, so a
/// callback made after the library is loaded waits for a background init.
pub fn run_init(name: &'static str, background: bool, init: fn() -> Result<(), Failure>) {
    arm_init(background);
    // SAFETY: armed just above, for this init only.
    unsafe { start_init(name, background, init) };
}

fn start(name: &'static str, background: bool, init: fn() -> Result<(), Failure>) {
    if !background {
        run(name, InitKind::Foreground, init);
        return;
    }
    // A `dlclose` meanwhile must not unmap the init's code.
    let hold = hooks::LibraryHold::take();
    let task = move || {
        run(name, InitKind::Background, init);
        hold.until_thread_exit();
    };
    if let Err(error) = spawn_detached(Box::new(task)) {
        GATE.finish(
            InitKind::Background,
            Err(format!("`{name}` could not start its thread: {error}")),
        );
    }
}

/// Inits recorded by load-time constructors and not started yet (Windows).
#[cfg_attr(not(windows), allow(dead_code))]
mod deferred {
    use std::sync::Mutex;

    use crate::failure::Failure;
    use crate::sync::lock;

    type Init = (&'static str, bool, fn() -> Result<(), Failure>);

    /// Taken whole by the first `start_all`, so each init starts once; never
    /// held while an init runs (a library loaded by init code would deadlock).
    static PENDING: Mutex<Vec<Init>> = Mutex::new(Vec::new());

    pub(super) fn defer(name: &'static str, background: bool, init: fn() -> Result<(), Failure>) {
        lock(&PENDING).push((name, background, init));
    }

    /// Starts every deferred init; foreground ones run here, in load order.
    #[cold]
    pub(super) fn start_all() {
        let pending = core::mem::take(&mut *lock(&PENDING));
        for (name, background, init) in pending {
            super::start(name, background, init);
        }
    }
}

/// Starts the deferred inits (Windows), outside the loader lock: from the
/// first call that finds the gate closed, or [`init_state`].
#[inline]
fn start_deferred() {
    if cfg!(windows) {
        deferred::start_all();
    }
}

/// Starts `task` on a detached thread (dropping it if that fails).
/// `pthread_create` rather than `std::thread`, which registers a
/// thread-local destructor on the calling (`dlopen`ing) thread: glibc
/// keeps a library with a pending one loaded, so `dlclose` could never
/// unload it.
#[cfg(unix)]
fn spawn_detached(task: Box<dyn FnOnce() + Send>) -> Result<(), std::io::Error> {
    use core::ffi::c_void;
    use core::mem::MaybeUninit;

    fn checked(rc: libc::c_int) -> Result<(), std::io::Error> {
        match rc {
            0 => Ok(()),
            rc => Err(std::io::Error::from_raw_os_error(rc)),
        }
    }

    extern "C" fn start(arg: *mut c_void) -> *mut c_void {
        // SAFETY: `arg` is the `Box<Box<dyn FnOnce>>` leaked by `create`,
        // handed to exactly one thread.
        let task = unsafe { Box::from_raw(arg.cast::<Box<dyn FnOnce() + Send>>()) };
        task();
        core::ptr::null_mut()
    }

    /// Starts a thread with `attr` running `task`.
    ///
    /// # Safety
    ///
    /// `attr` points to an initialised `pthread_attr_t`.
    unsafe fn create(
        attr: *const libc::pthread_attr_t,
        task: Box<dyn FnOnce() + Send>,
    ) -> Result<(), std::io::Error> {
        let arg = Box::into_raw(Box::new(task)).cast::<c_void>();
        let mut thread = MaybeUninit::<libc::pthread_t>::uninit();
        // SAFETY: `thread` is a valid out-pointer, `attr` initialised (caller
        // obligation); `start` has the expected signature and owns `arg` only
        // if the thread starts.
        let created =
            checked(unsafe { libc::pthread_create(thread.as_mut_ptr(), attr, start, arg) });
        if created.is_err() {
            // SAFETY: the thread did not start, so `arg` is still ours.
            drop(unsafe { Box::from_raw(arg.cast::<Box<dyn FnOnce() + Send>>()) });
        }
        created
    }

    let mut attr = MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: `attr` is a valid out-pointer.
    checked(unsafe { libc::pthread_attr_init(attr.as_mut_ptr()) })?;
    // SAFETY: `attr` was initialised above.
    let detached = checked(unsafe {
        libc::pthread_attr_setdetachstate(attr.as_mut_ptr(), libc::PTHREAD_CREATE_DETACHED)
    });
    // SAFETY: `attr` was initialised above.
    let started = detached.and_then(|()| unsafe { create(attr.as_ptr(), task) });
    // SAFETY: initialised above, destroyed once; the thread does not need
    // it.
    let destroyed = checked(unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) });
    started?;
    if let Err(error) = destroyed {
        // The init runs already and ends its own count: say so and go on.
        crate::diag::report(&format!(
            "callgate: pthread_attr_destroy failed after starting an init thread: {error}"
        ));
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

fn run(name: &'static str, kind: InitKind, init: fn() -> Result<(), Failure>) {
    let entry = enter_init();
    let outcome = match catch_unwind(AssertUnwindSafe(init)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(failure)) => Err(format!("`{name}`: {}", failure.message())),
        Err(payload) => Err(format!("`{name}` panicked: {}", payload_message(payload))),
    };
    if let Some(entry) = entry {
        // Relaxed: see `enter_init`.
        entry.store(0, Ordering::Relaxed);
    }
    GATE.finish(kind, outcome);
}

/// In a `fork` child: an init that was pending on another thread of the
/// parent will never finish here, so the gate fails (`Gate::after_fork`).
#[cfg(unix)]
pub(crate) fn after_fork_in_child() {
    let id = thread_id();
    let forking_thread_in_init = in_init();
    // Relaxed: the child has one thread (see `arm_init`).
    let forked_by_loader = LOADER.load(Ordering::Relaxed) == id;
    for entry in &INIT_THREADS {
        // Relaxed: the child has one thread.
        if entry.load(Ordering::Relaxed) != id {
            entry.store(0, Ordering::Relaxed);
        }
    }
    // The loader runs foreground inits only.
    GATE.after_fork(
        forked_by_loader,
        forking_thread_in_init && !forked_by_loader,
    );
}

/// Opens the gate's fast-path word ([`FastGate`]) if the gate is open.
///
/// The word must not stay open past the gate: an init armed after the
/// check closes it (`arm_init`), and one armed before the opening is seen
/// by the re-check. All of these are `SeqCst`, so the re-check cannot miss
/// an arm whose close came first. A call that reads the word open in that
/// window runs as if it passed the gate just before the arm, as any may.
#[inline]
pub(crate) fn open_fast_path() {
    if FastGate::is_shut() {
        open_fast_path_slow();
    }
}

#[cold]
#[inline(never)]
fn open_fast_path_slow() {
    if GATE.is_ready_seqcst() {
        FastGate::open();
        if !GATE.is_ready_seqcst() {
            FastGate::close();
        }
    }
}

/// The gate's slow path: init code passes at once, others wait or fail.
#[cold]
#[inline(never)]
pub(crate) fn pass_gate_slow(name: &str, policy: GatePolicy) -> Result<(), Closed> {
    if in_init() {
        return Ok(());
    }
    start_deferred();
    GATE.pass_slow(policy, stats::record_gate_wait, || report_long_wait(name))
}

/// Says once per copy of the runtime that a call of `name` has waited
/// [`LONG_WAIT`](crate::gate::LONG_WAIT) at the gate: an init that waits
/// for such a call waits for good, and a hung process should say why.
#[cold]
fn report_long_wait(name: &str) {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    // Relaxed: the flag guards nothing but the message itself.
    if !REPORTED.swap(true, Ordering::Relaxed) {
        diag::report(&format!(
            "callgate: a call of `{name}` has waited {} s at the init gate for \
             `#[callgate::init]` code that is still running; if that init waits for this \
             thread (joins a thread that makes a gated call, say), neither will go on: give \
             such callbacks `gate = skip`, or let the init return first",
            crate::gate::LONG_WAIT.as_secs()
        ));
    }
}
