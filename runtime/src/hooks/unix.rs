//! Unix: a pthread key whose destructor releases an exiting thread's
//! context and frees its last error, the `fork` child handler, and the
//! `dlopen` pin that keeps the code of a pending key destructor mapped.

use core::ffi::c_void;
use core::ptr;
use std::sync::Once;

use crate::context::ContextNode;
use crate::diag;
use crate::sync::{AtomicUsize, Ordering};

/// Bound threads are released by the key destructor when they exit.
pub(crate) const HAS_THREAD_EXIT_HOOK: bool = true;

/// `pthread_key_t + 1`, 0 before the key exists (keys may be 0), or
/// [`NO_KEY`].
static KEY: AtomicUsize = AtomicUsize::new(0);
/// `KEY` once `pthread_key_create` failed: every key of the process is
/// in use (`PTHREAD_KEYS_MAX`). Above every `pthread_key_t + 1`.
const NO_KEY: usize = usize::MAX;
static PIN: Once = Once::new();
static AT_FORK: Once = Once::new();

/// The key value of a thread that is not bound but needs its exit hook:
/// to free its last-error message, or to release a per-call context
/// whose outermost call never returned.
static ARMED: u8 = 0;

fn armed() -> *const c_void {
    (&raw const ARMED).cast()
}

/// Makes sure the thread's exit hook runs even if the thread is not
/// bound: a no-op if it is armed already.
#[cold]
pub(crate) fn arm_exit_hook() {
    let Some(key) = key() else { return };
    // SAFETY: `key` is a live key created by `key()`, deleted only when
    // the library is unloaded.
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

/// True when threads have an exit hook: the pthread key exists, or has
/// just been created. False once creating it failed; the caller then
/// serves the thread per call (see the guide's Known limits).
pub(crate) fn exit_hook_ready() -> bool {
    key().is_some()
}

/// Stores `node`, the context just bound to the calling thread, in the
/// pthread key, so `on_thread_exit` releases it when the thread exits.
/// Called only once [`exit_hook_ready`] returned true. `#[hot_path]`, to
/// share `bind_first`'s page.
#[hot_path]
pub(crate) fn register_exit_hook(node: &'static ContextNode) {
    let Some(key) = key() else {
        unreachable!("a thread was bound without an exit hook")
    };
    // SAFETY: `key` is a live key created by `key()`, deleted only when
    // the library is unloaded.
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

/// The process-wide key of this copy of the runtime, created on first
/// use; `None` if creating it failed.
fn key() -> Option<libc::pthread_key_t> {
    // Acquire: pairs with the AcqRel CAS below, so the key is fully
    // created before another thread uses it.
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

/// Creates the key and publishes it, or [`NO_KEY`] if the process has
/// none left; returns what `KEY` holds then. The failure is final, so later
/// attaches do not each scan the process's keys again.
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
                // SAFETY: we created `key` above and nobody else has
                // seen it.
                let rc = unsafe { libc::pthread_key_delete(key) };
                debug_assert_eq!(rc, 0);
            }
            winner
        }
    }
}

/// Reported once, when creating the key fails.
const NO_KEY_WARNING: &str = "callgate: pthread_key_create failed: every pthread key of the \
    process is in use (PTHREAD_KEYS_MAX); callbacks go on, each call served per call \
    (see Known limits in callgate's guide)";

/// The key destructor: [`on_thread_exit`], entered on a stack aligned
/// as the ABI requires.
///
/// On x86-64 Linux through `__callgate_thread_exit_hook`, which aligns
/// the stack to 16 bytes first: musl (1.2.3) may run the key destructors of
/// an asynchronously cancelled thread 8 bytes off that alignment.
#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
const THREAD_EXIT_HOOK: unsafe extern "C" fn(*mut c_void) = __callgate_thread_exit_hook;
#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
const THREAD_EXIT_HOOK: unsafe extern "C" fn(*mut c_void) = on_thread_exit;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
unsafe extern "C" {
    /// `on_thread_exit(value)` on a stack aligned to 16 bytes (the
    /// assembly below).
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
/// releases its context, found in the slot (the key's value only arms the
/// hook).
///
/// # Safety
///
/// Called only by the C library, as the destructor of this copy's
/// pthread key, on the exiting thread whose value it was (through
/// `__callgate_thread_exit_hook`): its outermost calls have returned
/// or were abandoned, and none of them runs again.
unsafe extern "C" fn on_thread_exit(_value: *mut c_void) {
    crate::last_error::discard();
    // SAFETY: this is the key destructor of the exiting thread.
    let withdrawn = unsafe { crate::thread::release_at_exit() };
    // SAFETY: just withdrawn from the exiting thread's context, whose
    // calls are all over.
    unsafe { crate::closure::end_hold(withdrawn) };
}

/// In a `fork` child only the forking thread exists, so the child handler
/// hands back the contexts of the parent's other threads
/// (`thread::reclaim_orphans`) and fails the inits it has no thread for.
/// Without it a child could hang or leak, so failing to register aborts.
fn register_fork_handler() {
    // SAFETY: the handlers have the expected signature; glibc
    // unregisters a library's handlers when it is unloaded.
    let rc = unsafe {
        libc::pthread_atfork(Some(before_fork), Some(in_fork_parent), Some(in_fork_child))
    };
    if rc != 0 {
        diag::abort_with(
            "callgate: pthread_atfork failed (out of memory): cannot register the fork handler; aborting",
        );
    }
}

/// Registers the `fork` child handler, once per copy of the runtime.
pub(crate) fn handle_fork() {
    AT_FORK.call_once(register_fork_handler);
}

/// Before `fork`: hold the message list's lock, so the child never
/// inherits it held by a thread it does not have.
extern "C" fn before_fork() {
    crate::messages::lock();
}

extern "C" fn in_fork_parent() {
    crate::messages::unlock();
}

extern "C" fn in_fork_child() {
    crate::messages::unlock();
    // SAFETY: `pthread_atfork` runs child handlers in the child, right
    // after `fork`, on its only thread.
    let left = unsafe { crate::thread::reclaim_orphans() };
    for withdrawn in left.announced {
        // SAFETY: withdrawn from the context of a thread this child
        // does not have.
        unsafe { crate::closure::end_hold(withdrawn) };
    }
    for (object, turn, mark) in left.held {
        // SAFETY: taken once from the context of a thread this child
        // does not have, on the child's only thread.
        unsafe { crate::closure::give_up_left_behind(object, turn, mark) };
    }
    crate::init::after_fork_in_child();
}

/// Once a thread is bound, a pending key destructor points into this
/// object's code, so it must never be unmapped: `dlopen` ourselves with
/// `RTLD_NODELETE` (a no-op for the main executable).
fn pin_this_object() {
    // The handle is deliberately kept: with RTLD_NODELETE the object
    // stays mapped for the rest of the process anyway.
    let _ = open_this_object(libc::RTLD_NODELETE);
}

/// Takes a reference on the shared object this code is in, with
/// `RTLD_NOLOAD | extra_flags`; null if it cannot be found (then nothing
/// was taken).
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
    // SAFETY: `dli_fname` is a NUL-terminated path owned by the loader;
    // RTLD_NOLOAD only takes a reference on an already-loaded object.
    unsafe {
        libc::dlopen(
            info.dli_fname,
            libc::RTLD_NOW | libc::RTLD_NOLOAD | extra_flags,
        )
    }
}

/// Keeps the library loaded while a background init runs: a `dlopen`
/// reference taken by the load-time constructor, which the init's thread
/// trades for a thread-exit destructor
/// ([`until_thread_exit`](LibraryHold::until_thread_exit)). Dropped
/// instead, the reference is kept.
pub(crate) struct LibraryHold {
    handle: *mut c_void,
}

// SAFETY: a `dlopen` handle may be closed from any thread.
unsafe impl Send for LibraryHold {}

impl LibraryHold {
    /// Takes a reference on the library; called by its constructor,
    /// before the init's thread starts.
    pub(crate) fn take() -> LibraryHold {
        LibraryHold {
            handle: open_this_object(0),
        }
    }

    /// On the init's thread, once the init has finished: keeps the
    /// library loaded until this thread has exited, then lets go of the
    /// `dlopen` reference that kept it loaded while the init ran.
    ///
    /// glibc does not unload a library while a thread has a pending
    /// thread-exit destructor (`__cxa_thread_atexit_impl`) of it, so the
    /// code is never unmapped under this thread. Registered only after the
    /// init: registering takes the loader's lock, which a `dlopen` holds
    /// while another library's constructor may wait for this init.
    pub(crate) fn until_thread_exit(self) {
        if self.handle.is_null() {
            return;
        }
        if thread_exit_destructor::register() {
            // SAFETY: `handle` came from `dlopen` and is closed once;
            // the registered destructor keeps the library loaded.
            let rc = unsafe { libc::dlclose(self.handle) };
            debug_assert_eq!(rc, 0);
        }
        // Otherwise the reference is kept: the library stays loaded.
    }
}

#[cfg(target_env = "gnu")]
mod thread_exit_destructor {
    use core::ffi::c_void;

    unsafe extern "C" {
        /// glibc's thread-exit destructor registration (C++'s
        /// `thread_local` destructors use it), since glibc 2.18.
        fn __cxa_thread_atexit_impl(
            destructor: unsafe extern "C" fn(*mut c_void),
            object: *mut c_void,
            dso_symbol: *mut c_void,
        ) -> libc::c_int;
        /// This object's handle, defined by the C runtime's start files.
        static __dso_handle: u8;
    }

    /// Nothing to destroy: the registration itself is the point.
    unsafe extern "C" fn nothing(_: *mut c_void) {}

    /// Registers a destructor of this library for the calling thread's
    /// exit; false if glibc could not (it is out of memory).
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
