//! The library's constructor and destructor (`.init_array`, `.fini_array`):
//! what the library frees when `dlclose` unloads it.

use core::ffi::c_void;
use core::ptr;

use super::{KEY, NO_KEY, PIN};
use crate::sync::{AtomicBool, Ordering};

/// Set at process exit (before any library destructor), when other threads
/// may still run callbacks: `on_unload` then frees nothing.
static EXITING: AtomicBool = AtomicBool::new(false);

#[used]
#[unsafe(link_section = ".init_array")]
static ON_LOAD: extern "C" fn() = on_load;

#[used]
#[unsafe(link_section = ".fini_array")]
static ON_UNLOAD: extern "C" fn() = on_unload;

extern "C" fn mark_exiting(_: *mut c_void) {
    // Release: pairs with the Acquire in `on_unload`.
    EXITING.store(true, Ordering::Release);
}

/// Arranges for `EXITING` to be set at exit.
extern "C" fn on_load() {
    if cfg!(miri) {
        // Miri has no `__dso_handle`: as if the registration failed.
        // Release: pairs with the Acquire in `on_unload`.
        EXITING.store(true, Ordering::Release);
        return;
    }
    unsafe extern "C" {
        fn __cxa_atexit(
            function: extern "C" fn(*mut c_void),
            argument: *mut c_void,
            dso_handle: *mut c_void,
        ) -> libc::c_int;
        static __dso_handle: u8;
    }
    // SAFETY: `mark_exiting` has the handler signature; `__dso_handle` names
    // this object, so glibc runs it at exit, or at unload after `on_unload`.
    let rc = unsafe {
        __cxa_atexit(
            mark_exiting,
            ptr::null_mut(),
            (&raw const __dso_handle).cast_mut().cast(),
        )
    };
    if rc != 0 {
        // Without it an exit could free contexts under running threads.
        EXITING.store(true, Ordering::Release);
    }
}

/// The library's destructor. At `dlclose` no thread is bound (bound
/// threads pin the library) or runs its code: it deletes the key and frees
/// what the runtime holds.
extern "C" fn on_unload() {
    // Acquire: pairs with the Release in `mark_exiting`.
    if EXITING.load(Ordering::Acquire) || PIN.is_completed() {
        return;
    }
    // Relaxed: no other thread runs the library's code.
    let stored = KEY.swap(0, Ordering::Relaxed);
    if stored != 0 && stored != NO_KEY {
        // SAFETY: from `create_key`, deleted once; unused now.
        let rc = unsafe { libc::pthread_key_delete((stored - 1) as libc::pthread_key_t) };
        debug_assert_eq!(rc, 0);
    }
    // SAFETY: nothing runs the library's code or is bound, and nothing will
    // before it is unmapped.
    unsafe {
        crate::init::GATE.free_failure();
        crate::messages::free_all();
        crate::thread::free_pool();
        crate::local::free_registry();
        crate::closure::free_tombstones();
    }
}
