//! Unix: a pthread key whose destructor releases an exiting thread's
//! context and last error, the `fork` handlers, and the `dlopen` pin.

use core::ffi::c_void;
use core::ptr;
use std::sync::Once;

use crate::context::ContextNode;
use crate::diag;
use crate::sync::{AtomicUsize, Ordering};

pub(crate) const HAS_THREAD_EXIT_HOOK: bool = true;

/// `pthread_key_t + 1` (keys may be 0), 0 before the key exists, or
/// [`NO_KEY`].
static KEY: AtomicUsize = AtomicUsize::new(0);
/// `KEY` once `pthread_key_create` failed (`PTHREAD_KEYS_MAX`).
const NO_KEY: usize = usize::MAX;
static PIN: Once = Once::new();
static AT_FORK: Once = Once::new();

/// The key value of a thread that is not bound but needs its exit hook
/// (a last error, or a per-call context whose call never returned).
static ARMED: u8 = 0;

fn armed() -> *const c_void {
    (&raw const ARMED).cast()
}

/// Makes sure the thread's exit hook runs even if it is not bound.
#[cold]
pub(crate) fn arm_exit_hook() {
    let Some(key) = key() else { return };
    // SAFETY: a live key from `key()`, deleted only at unload.
    if unsafe { libc::pthread_getspecific(key) }.is_null() {
        // SAFETY: as above.
        let rc = unsafe { libc::pthread_setspecific(key, armed()) };
        if rc != 0 {
            diag::abort_with("callgate: pthread_setspecific failed (out of memory); aborting");
        }
        // A child must take back contexts of per-call threads too.
        handle_fork();
    }
}

/// True when threads have an exit hook; false once creating the key
/// failed (threads are then served per call: Known limits).
pub(crate) fn exit_hook_ready() -> bool {
    key().is_some()
}

/// Stores `node`, just bound to the calling thread, in the pthread key,
/// once [`exit_hook_ready`]. `#[hot_path]`, to share `bind_first`'s page.
#[hot_path]
pub(crate) fn register_exit_hook(node: &'static ContextNode) {
    let Some(key) = key() else {
        unreachable!("a thread was bound without an exit hook")
    };
    // SAFETY: as in `arm_exit_hook`.
    let rc = unsafe { libc::pthread_setspecific(key, ptr_of(node)) };
    if rc != 0 {
        diag::abort_with("callgate: pthread_setspecific failed (out of memory); aborting");
    }
    PIN.call_once(pin_this_object);
    handle_fork();
}

fn ptr_of(node: &'static ContextNode) -> *const c_void {
    (node as *const ContextNode).cast()
}

/// This copy of the runtime's key, created on first use; `None` if that
/// failed.
fn key() -> Option<libc::pthread_key_t> {
    // Acquire: pairs with the AcqRel CAS in `create_key`.
    stored_key(match KEY.load(Ordering::Acquire) {
        0 => create_key(),
        stored => stored,
    })
}

fn stored_key(stored: usize) -> Option<libc::pthread_key_t> {
    match stored {
        NO_KEY => None,
        stored => Some((stored - 1) as libc::pthread_key_t),
    }
}

/// Creates and publishes the key, or [`NO_KEY`] for good (so later
/// attaches do not scan the keys again); returns what `KEY` holds then.
#[cold]
fn create_key() -> usize {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is a valid out-pointer; `THREAD_EXIT_HOOK` has the
    // destructor signature.
    let rc = unsafe { libc::pthread_key_create(&mut key, Some(THREAD_EXIT_HOOK)) };
    let stored = if rc == 0 { key as usize + 1 } else { NO_KEY };
    // AcqRel: Release publishes our key, Acquire reads a winner's.
    match KEY.compare_exchange(0, stored, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => {
            if stored == NO_KEY {
                diag::report(NO_KEY_WARNING);
            }
            stored
        }
        Err(winner) => {
            if stored != NO_KEY {
                // SAFETY: ours, and never published.
                let rc = unsafe { libc::pthread_key_delete(key) };
                debug_assert_eq!(rc, 0);
            }
            winner
        }
    }
}

const NO_KEY_WARNING: &str = "callgate: pthread_key_create failed: every pthread key of the \
    process is in use (PTHREAD_KEYS_MAX); callbacks go on, each call served per call \
    (see Known limits in callgate's guide)";

/// The key destructor: on x86-64 Linux through
/// `__callgate_thread_exit_hook`, which aligns the stack first (musl 1.2.3
/// may run an asynchronously cancelled thread's destructors 8 bytes off).
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
const THREAD_EXIT_HOOK: unsafe extern "C" fn(*mut c_void) = __callgate_thread_exit_hook;
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
const THREAD_EXIT_HOOK: unsafe extern "C" fn(*mut c_void) = on_thread_exit;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe extern "C" {
    /// `on_thread_exit(value)` on a 16-byte aligned stack.
    fn __callgate_thread_exit_hook(value: *mut c_void);
}

// Hidden: each copy of the runtime registers its own.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
aligned_call_function!(
    "__callgate_thread_exit_hook",
    ["call {on_thread_exit}"],
    on_thread_exit = sym on_thread_exit,
);

/// The key destructor's work: frees the exiting thread's last error and
/// releases its context (found in the slot).
///
/// # Safety
///
/// Called only by the C library, as this copy's key destructor, on the
/// exiting thread: its calls returned or were abandoned.
unsafe extern "C" fn on_thread_exit(_value: *mut c_void) {
    crate::last_error::discard();
    // SAFETY: the exiting thread's key destructor.
    let withdrawn = unsafe { crate::thread::release_at_exit() };
    // SAFETY: just withdrawn from the exiting thread's context.
    unsafe { crate::closure::end_hold(withdrawn) };
}

/// Registers the `fork` handlers: the child hands back the contexts of the
/// parent's other threads (`thread::reclaim_orphans`) and fails their
/// inits. Without them a child could hang or leak: failing aborts.
fn register_fork_handler() {
    // SAFETY: the handlers have the expected signature; glibc unregisters
    // them when the library is unloaded.
    let rc = unsafe {
        libc::pthread_atfork(Some(before_fork), Some(in_fork_parent), Some(in_fork_child))
    };
    if rc != 0 {
        diag::abort_with(
            "callgate: pthread_atfork failed (out of memory): cannot register the fork handler; aborting",
        );
    }
}

pub(crate) fn handle_fork() {
    AT_FORK.call_once(register_fork_handler);
}

/// Holds the message list's lock across `fork`, so the child never
/// inherits it held.
extern "C" fn before_fork() {
    crate::messages::lock();
}

extern "C" fn in_fork_parent() {
    crate::messages::unlock();
}

extern "C" fn in_fork_child() {
    crate::messages::unlock();
    // SAFETY: a child handler runs on the child's only thread.
    let left = unsafe { crate::thread::reclaim_orphans() };
    for withdrawn in left.announced {
        // SAFETY: withdrawn from a context of a thread the child lacks.
        unsafe { crate::closure::end_hold(withdrawn) };
    }
    for object in left.held {
        // SAFETY: taken once from a context of a thread the child lacks, on its
        // only thread.
        unsafe { crate::closure::give_up_left_behind(object) };
    }
    crate::init::after_fork_in_child();
}

/// A pending key destructor points into this object's code: once a thread
/// is bound, `dlopen` ourselves with `RTLD_NODELETE`.
fn pin_this_object() {
    // The handle is kept: the object stays mapped anyway.
    let _ = open_this_object(libc::RTLD_NODELETE);
}

/// Takes a reference on the shared object this code is in
/// (`RTLD_NOLOAD | extra_flags`); null if it cannot be found.
fn open_this_object(extra_flags: libc::c_int) -> *mut c_void {
    if cfg!(miri) {
        // Miri has no `dladdr`, and unloads nothing it interprets.
        return ptr::null_mut();
    }
    let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let address = on_thread_exit as *const c_void;
    // SAFETY: `info` is a valid out-pointer; `address` is in our code.
    let found = unsafe { libc::dladdr(address, info.as_mut_ptr()) };
    if found == 0 {
        return ptr::null_mut();
    }
    // SAFETY: dladdr succeeded, so it filled `info`.
    let info = unsafe { info.assume_init() };
    if info.dli_fname.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: a NUL-terminated path owned by the loader; `RTLD_NOLOAD`
    // only takes a reference on a loaded object.
    unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_NOW | libc::RTLD_NOLOAD | extra_flags,
        )
    }
}

/// Keeps the library loaded while a background init runs: a `dlopen`
/// reference, which the init's thread trades for a thread-exit destructor
/// ([`until_thread_exit`](LibraryHold::until_thread_exit)).
pub(crate) struct LibraryHold {
    handle: *mut c_void,
}

// SAFETY: a `dlopen` handle may be closed from any thread.
unsafe impl Send for LibraryHold {}

impl LibraryHold {
    /// Takes a reference, before the init's thread starts.
    pub(crate) fn take() -> LibraryHold {
        LibraryHold {
            handle: open_this_object(0),
        }
    }

    /// On the init's thread, once the init finished: keeps the library loaded
    /// until the thread exits (glibc does not unload a library with a pending
    /// thread-exit destructor), then lets the `dlopen` reference go. Not
    /// before the init: registering takes the loader's lock, which a `dlopen`
    /// may hold while its constructor waits for this init.
    pub(crate) fn until_thread_exit(self) {
        if self.handle.is_null() {
            return;
        }
        if thread_exit_destructor::register() {
            // SAFETY: from `dlopen`, closed once.
            let rc = unsafe { libc::dlclose(self.handle) };
            debug_assert_eq!(rc, 0);
        }
        // Otherwise the reference is kept.
    }
}

#[cfg(target_env = "gnu")]
mod thread_exit_destructor {
    use core::ffi::c_void;

    unsafe extern "C" {
        /// glibc's thread-exit destructor registration (since glibc 2.18).
        fn __cxa_thread_atexit_impl(
            destructor: unsafe extern "C" fn(*mut c_void),
            object: *mut c_void,
            dso_symbol: *mut c_void,
        ) -> libc::c_int;
        static __dso_handle: u8;
    }

    unsafe extern "C" fn nothing(_: *mut c_void) {}

    /// Registers a destructor of this library for the thread's exit; false if
    /// glibc could not.
    pub(super) fn register() -> bool {
        // SAFETY: `nothing` ignores its argument; `__dso_handle` names
        // this object, so glibc ties the destructor to it.
        let rc = unsafe {
            __cxa_thread_atexit_impl(
                nothing,
                core::ptr::null_mut(),
                (&raw const __dso_handle).cast_mut().cast(),
            )
        };
        rc == 0
    }
}

#[cfg(not(target_env = "gnu"))]
mod thread_exit_destructor {
    /// No registration that holds a library loaded: keep the reference.
    pub(super) fn register() -> bool {
        false
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[path = "unix/load_and_unload.rs"]
mod load_and_unload;
