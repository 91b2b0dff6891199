//! The hooks C calls into the runtime, and their registration: the pthread
//! key whose destructor releases an exiting thread's context, the `fork`
//! child handler, and the `dlopen` pin that keeps the code of a pending key
//! destructor mapped.
//!
//! The C-invoked functions here are the only code of the runtime that calls
//! up its layers: C runs them outside every callback, and they hand over to
//! [`thread`](crate::thread) (release at thread exit, reclaiming contexts
//! after `fork`), [`last_error`](crate::last_error) (freeing the message
//! at thread exit) and [`init`](crate::init) (failing an init that `fork`
//! left behind). Everything else here is called from above: by `thread`
//! when it binds, by `last_error` when it sets a message, by `init` at load
//! time.
//!
//! Platform code sits behind a `cfg`-selected `mod imp`: pthread keys and
//! `pthread_atfork` on unix; a fiber-local-storage (FLS) callback on Windows;
//! elsewhere no hook at thread exit (every call is served per call) and a
//! `thread_local!` destructor to free the message.

pub(crate) use imp::{HAS_THREAD_EXIT_HOOK, free_at_exit, handle_fork, register_exit_hook};

#[cfg(unix)]
mod imp {
    use core::ffi::c_void;
    use core::ptr;
    use std::sync::Once;

    use crate::context::ContextNode;
    use crate::diag;
    use crate::sync::{AtomicUsize, Ordering};

    /// Bound threads are released by the key destructor when they exit.
    pub(crate) const HAS_THREAD_EXIT_HOOK: bool = true;

    /// `pthread_key_t + 1`, or 0 before the key exists (keys may be 0).
    static KEY: AtomicUsize = AtomicUsize::new(0);
    static PIN: Once = Once::new();
    static AT_FORK: Once = Once::new();

    /// The key value of a thread that is not bound but has a last-error
    /// message to free at exit.
    static ERROR_ONLY: u8 = 0;

    fn error_only() -> *const c_void {
        (&raw const ERROR_ONLY).cast()
    }

    /// Makes sure the thread's exit hook runs even if the thread is not
    /// bound, so the last-error message it just got is freed when it exits.
    #[cold]
    pub(crate) fn free_at_exit() {
        let key = key();
        // SAFETY: `key` is a live key created by `key()` and never deleted.
        if unsafe { libc::pthread_getspecific(key) }.is_null() {
            // SAFETY: as above.
            let rc = unsafe { libc::pthread_setspecific(key, error_only()) };
            if rc != 0 {
                diag::abort_with("callgate: pthread_setspecific failed (out of memory); aborting");
            }
        }
    }

    /// Stores `node`, the context just bound to the calling thread, in the
    /// pthread key, so `on_thread_exit` releases it when the thread exits.
    pub(crate) fn register_exit_hook(node: &'static ContextNode) {
        let key = key();
        // SAFETY: `key` is a live key created by `key()` and never deleted.
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

    /// The process-wide key of this copy of the runtime, created on first use.
    fn key() -> libc::pthread_key_t {
        // Acquire: pairs with the AcqRel CAS below, so the key is fully
        // created before another thread uses it.
        match KEY.load(Ordering::Acquire) {
            0 => create_key(),
            stored => (stored - 1) as libc::pthread_key_t,
        }
    }

    #[cold]
    fn create_key() -> libc::pthread_key_t {
        let mut key: libc::pthread_key_t = 0;
        // SAFETY: `key` is a valid out-pointer; `on_thread_exit` has the
        // destructor signature.
        let rc = unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) };
        if rc != 0 {
            diag::abort_with(
                "callgate: pthread_key_create failed (PTHREAD_KEYS_MAX reached); aborting",
            );
        }
        let stored = key as usize + 1;
        // AcqRel: Release publishes our key, Acquire reads a winner's.
        match KEY.compare_exchange(0, stored, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => key,
            Err(winner) => {
                // SAFETY: we created `key` above and nobody else has seen it.
                let rc = unsafe { libc::pthread_key_delete(key) };
                debug_assert_eq!(rc, 0);
                (winner - 1) as libc::pthread_key_t
            }
        }
    }

    /// The key destructor: the thread is exiting; free its last error and
    /// release its context.
    unsafe extern "C" fn on_thread_exit(value: *mut c_void) {
        crate::last_error::discard();
        let bound = if ptr::eq(value.cast_const(), error_only()) {
            None
        } else {
            // SAFETY: the key holds either `error_only()` (handled above) or
            // a node of `CONTEXTS` (never freed) stored by
            // `register_exit_hook` on this thread.
            Some(unsafe { &*value.cast::<ContextNode>() })
        };
        // SAFETY: this is the key destructor of the exiting thread, and
        // `bound` is what `register_exit_hook` stored for it: the context
        // bound to this thread, if any.
        unsafe { crate::thread::release_at_exit(bound) };
    }

    /// In a `fork` child only the forking thread exists: the contexts bound
    /// to the parent's other threads would stay bound forever, and an init
    /// running on one of them would never finish, so the child handler hands
    /// the contexts back and fails the gate.
    ///
    /// Without the handler a child could hang or leak, so a failure to
    /// register it (the C library is out of memory) aborts.
    fn register_fork_handler() {
        // SAFETY: `in_fork_child` has the handler signature; glibc
        // unregisters a library's handlers when it is unloaded.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(in_fork_child)) };
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

    extern "C" fn in_fork_child() {
        // SAFETY: `pthread_atfork` runs child handlers in the child, right
        // after `fork`, on its only thread.
        unsafe { crate::thread::reclaim_orphans() };
        crate::init::after_fork_in_child();
    }

    /// Once a thread is bound, a pending key destructor points into this
    /// object's code, so it must never be unmapped: `dlopen` ourselves with
    /// `RTLD_NODELETE` (a no-op for the main executable).
    fn pin_this_object() {
        let mut info = core::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        let address = on_thread_exit as *const c_void;
        // SAFETY: `info` is a valid out-pointer; `address` is in our code.
        let found = unsafe { libc::dladdr(address, info.as_mut_ptr()) };
        if found == 0 {
            return;
        }
        // SAFETY: dladdr succeeded, so it filled `info`.
        let info = unsafe { info.assume_init() };
        if info.dli_fname.is_null() {
            return;
        }
        // SAFETY: `dli_fname` is a NUL-terminated path owned by the loader;
        // RTLD_NOLOAD only takes a reference on an already-loaded object.
        let handle = unsafe {
            libc::dlopen(
                info.dli_fname,
                libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
            )
        };
        // The handle is deliberately kept: with RTLD_NODELETE the object
        // stays mapped for the rest of the process anyway.
        let _ = handle;
    }
}

#[cfg(windows)]
#[path = "hooks/windows.rs"]
mod imp;

#[cfg(not(any(unix, windows)))]
mod imp {
    use crate::context::ContextNode;

    /// Without pthread keys there is no portable hook at thread exit, so
    /// every call attaches and releases (the `per_call` behaviour).
    pub(crate) const HAS_THREAD_EXIT_HOOK: bool = false;

    pub(crate) fn register_exit_hook(_node: &'static ContextNode) {
        unreachable!("per-call only on this platform")
    }

    /// Frees the last error when the thread's Rust thread-locals are
    /// destroyed (a message set after that leaks: there is no later hook).
    struct FreeOnExit;

    impl Drop for FreeOnExit {
        fn drop(&mut self) {
            crate::last_error::discard();
        }
    }

    thread_local! {
        static FREE_ON_EXIT: FreeOnExit = const { FreeOnExit };
    }

    /// Makes sure the thread's last-error message is freed when it exits.
    #[cold]
    pub(crate) fn free_at_exit() {
        let _ = FREE_ON_EXIT.try_with(|_| ());
    }

    /// No `fork` here.
    pub(crate) fn handle_fork() {}
}
