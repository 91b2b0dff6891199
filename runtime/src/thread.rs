//! Attaching threads to contexts: the fast thread-local lookup, the cold
//! bind path, and the release that hands a context back to the free list.
//!
//! A thread's first call pops a context (or allocates one) and stores it in a
//! const-initialised thread-local without a destructor — so the fast path is
//! one thread-local load and works at any point of thread teardown — and in
//! a pthread key whose destructor releases the context when the thread exits.
//! A thread that calls back *after* that release (from another key's
//! destructor, say) is served per call: it gets a context for the duration
//! of the outermost call only, so nothing leaks.

use core::ptr;

use crate::boundary::Attach;
use crate::context::{CONTEXTS, Context, ContextNode};
use crate::settings::{self, AttachMode};

/// The slot's value once the key destructor released the thread's bound
/// context: the thread is exiting, so later calls are served per call. (The
/// slot holds null, this marker, or a context node.)
const EXITED: *const ContextNode = ptr::without_provenance(1);

/// The context serving this thread, if any: the fast path.
#[inline(always)]
pub(crate) fn current() -> Option<&'static ContextNode> {
    let node = slot::get();
    if node.addr() <= EXITED.addr() {
        return None;
    }
    // SAFETY: values of the slot other than null and `EXITED` are nodes of
    // `CONTEXTS`, which are never freed.
    Some(unsafe { &*node })
}

/// The thread's current-context pointer, in an initial-exec TLS slot.
///
/// In a `cdylib` or `dlopen`ed library, `thread_local!` uses the
/// general-dynamic TLS model: every access calls `__tls_get_addr`. Stable
/// Rust cannot choose a TLS model, so on x86-64 glibc Linux the slot is an
/// 8-byte `.tbss` symbol defined in assembly and read with the
/// initial-exec sequence — load its offset from the GOT, then read through
/// `%fs` — two instructions and no call. The cost: a library using it takes
/// 8 bytes of glibc's static TLS surplus when loaded with `dlopen` (glibc
/// reserves surplus for such libraries; exhausting it makes `dlopen` fail
/// with "cannot allocate memory in static TLS block"). Build with
/// `--cfg callgate_portable_tls` to use `thread_local!` instead.
#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(callgate_portable_tls)
))]
mod slot {
    use core::arch::{asm, global_asm};

    use crate::context::ContextNode;

    // One pointer-sized, zero-initialised (null) slot per thread. Hidden, so
    // every shared object that contains this runtime has its own slot.
    global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 3",
        ".globl __callgate_current_context",
        ".hidden __callgate_current_context",
        ".type __callgate_current_context,@object",
        ".size __callgate_current_context,8",
        "__callgate_current_context:",
        ".zero 8",
        ".popsection",
    );

    #[inline(always)]
    pub(super) fn get() -> *const ContextNode {
        let value: *const ContextNode;
        // SAFETY: reads this thread's 8-byte slot: the GOT entry holds the
        // slot's offset from the thread pointer (`%fs` base), which the
        // dynamic linker set up for every thread, including threads created
        // before the library was loaded (static TLS is allocated with the
        // thread). No stack use, flags preserved, nothing written.
        unsafe {
            asm!(
                "mov {value}, qword ptr [rip + __callgate_current_context@GOTTPOFF]",
                "mov {value}, qword ptr fs:[{value}]",
                value = out(reg) value,
                options(nostack, preserves_flags, readonly, pure),
            );
        }
        value
    }

    #[inline(always)]
    pub(super) fn set(value: *const ContextNode) {
        // SAFETY: writes this thread's slot (see `get`); only this thread
        // ever accesses it.
        unsafe {
            asm!(
                "mov {offset}, qword ptr [rip + __callgate_current_context@GOTTPOFF]",
                "mov qword ptr fs:[{offset}], {value}",
                offset = out(reg) _,
                value = in(reg) value,
                options(nostack, preserves_flags),
            );
        }
    }
}

/// The portable slot: a const-initialised `thread_local!` without a
/// destructor, so it stays usable during thread teardown.
#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(callgate_portable_tls)
)))]
mod slot {
    use core::cell::Cell;

    use crate::context::ContextNode;

    thread_local! {
        static CURRENT: Cell<*const ContextNode> = const { Cell::new(core::ptr::null()) };
    }

    #[inline(always)]
    pub(super) fn get() -> *const ContextNode {
        CURRENT.with(Cell::get)
    }

    #[inline(always)]
    pub(super) fn set(value: *const ContextNode) {
        CURRENT.with(|current| current.set(value));
    }
}

/// Attaches the calling thread to a context: the slow path of a thread's
/// first call (or of every call in per-call mode).
#[cold]
#[inline(never)]
pub(crate) fn attach(attach: Attach) -> &'static ContextNode {
    let after_exit = ptr::eq(slot::get(), EXITED);
    let per_call = attach == Attach::PerCall
        || !imp::HAS_THREAD_EXIT_HOOK
        || after_exit
        || settings::current().attach == AttachMode::PerCall;
    let node = CONTEXTS
        .pop()
        .unwrap_or_else(|| CONTEXTS.alloc(Context::new()));
    debug_assert_eq!(node.value.depth(), 0);
    node.value.set_per_call(per_call, after_exit);
    slot::set(node);
    if !per_call {
        imp::register_exit_hook(node);
    }
    node.value.binds.bump();
    node
}

/// True once the runtime's key destructor ran on this thread.
pub(crate) fn exiting() -> bool {
    ptr::eq(slot::get(), EXITED) || current().is_some_and(|node| node.value.after_exit())
}

/// Makes sure a `fork` child cleans up after the parent's other threads
/// (their contexts, an init they were running).
pub(crate) fn handle_fork() {
    imp::handle_fork();
}

/// Makes sure the thread's exit hook runs even if the thread is not bound,
/// so the last-error message it just got is freed when it exits.
#[cold]
pub(crate) fn free_at_exit() {
    imp::free_at_exit();
}

/// A call returned on `node`'s thread; releases it if it was the outermost
/// call of a per-call attachment.
#[inline(always)]
pub(crate) fn leave(node: &'static ContextNode) {
    if node.value.leave() {
        release(node);
    }
}

/// Hands `node` back: runs `Local::release` on its values, detaches the
/// thread and pushes the context onto the free list.
#[cold]
#[inline(never)]
fn release(node: &'static ContextNode) {
    // SAFETY: we run on the thread that owns the context, between calls, so
    // no `LocalRef` is alive.
    unsafe { node.value.locals.release_all() };
    if ptr::eq(slot::get(), node) {
        slot::set(if node.value.after_exit() {
            EXITED
        } else {
            ptr::null()
        });
    }
    node.value.releases.bump();
    CONTEXTS.push(node);
}

/// In a `fork` child: returns every context that is neither free nor
/// serving this (the only) thread to the free list. Their `#[local]` values
/// are abandoned: the threads they served are gone, so neither `release`
/// nor `Drop` runs for them.
#[cfg(unix)]
#[cold]
fn reclaim_orphans() {
    let own = current().map(|node| node.index());
    let mut free = vec![false; CONTEXTS.allocated()];
    for index in CONTEXTS.free_indices() {
        if let Some(slot) = free.get_mut(index as usize) {
            *slot = true;
        }
    }
    for node in CONTEXTS.iter() {
        let index = node.index();
        if Some(index) == own || free.get(index as usize).copied().unwrap_or(false) {
            continue;
        }
        // SAFETY: this is the only thread of the child, and `node` serves
        // no thread of it.
        unsafe { node.value.reset_orphan() };
        CONTEXTS.push(node);
    }
}

#[cfg(unix)]
mod imp {
    use core::ffi::c_void;
    use std::sync::Once;

    use core::ptr;

    use super::{EXITED, release, slot};
    use crate::context::ContextNode;
    use crate::sync::{AtomicUsize, Ordering};

    pub(super) const HAS_THREAD_EXIT_HOOK: bool = true;

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

    pub(super) fn free_at_exit() {
        let key = key();
        // SAFETY: `key` is a live key created by `key()` and never deleted.
        if unsafe { libc::pthread_getspecific(key) }.is_null() {
            // SAFETY: as above.
            let rc = unsafe { libc::pthread_setspecific(key, error_only()) };
            if rc != 0 {
                crate::abort_with("callgate: pthread_setspecific failed (out of memory); aborting");
            }
        }
    }

    /// Stores `node` in the pthread key so `on_thread_exit` releases it.
    pub(super) fn register_exit_hook(node: &'static ContextNode) {
        let key = key();
        // SAFETY: `key` is a live key created by `key()` and never deleted.
        let rc = unsafe { libc::pthread_setspecific(key, ptr_of(node)) };
        if rc != 0 {
            crate::abort_with("callgate: pthread_setspecific failed (out of memory); aborting");
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
            crate::abort_with(
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
        crate::error::discard();
        if ptr::eq(value.cast_const(), error_only()) {
            slot::set(EXITED);
            return;
        }
        // SAFETY: the key holds either `error_only()` (handled above) or a
        // node of `CONTEXTS` (never freed) stored by `register_exit_hook` on
        // this thread.
        let node = unsafe { &*value.cast::<ContextNode>() };
        if node.value.depth() != 0 {
            // Unreachable in practice: a thread cannot exit in the middle of
            // a callback without unwinding through it, which aborts.
            return;
        }
        release(node);
        slot::set(EXITED);
    }

    /// In a `fork` child only the forking thread exists: the contexts bound
    /// to the parent's other threads would stay bound forever, and an init
    /// running on one of them would never finish, so the child handler hands
    /// the contexts back and fails the gate.
    fn register_fork_handler() {
        // SAFETY: `in_fork_child` has the handler signature; glibc
        // unregisters a library's handlers when it is unloaded.
        let rc = unsafe { libc::pthread_atfork(None, None, Some(in_fork_child)) };
        debug_assert_eq!(rc, 0);
    }

    /// Registers the `fork` child handler, once per copy of the runtime.
    pub(super) fn handle_fork() {
        AT_FORK.call_once(register_fork_handler);
    }

    extern "C" fn in_fork_child() {
        super::reclaim_orphans();
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

#[cfg(not(unix))]
mod imp {
    use crate::context::ContextNode;

    /// Without pthread keys there is no portable hook at thread exit, so
    /// every call attaches and releases (the `per_call` behaviour).
    pub(super) const HAS_THREAD_EXIT_HOOK: bool = false;

    pub(super) fn register_exit_hook(_node: &'static ContextNode) {
        unreachable!("per-call only on this platform")
    }

    /// Frees the last error when the thread's Rust thread-locals are
    /// destroyed (a message set after that leaks: there is no later hook).
    struct FreeOnExit;

    impl Drop for FreeOnExit {
        fn drop(&mut self) {
            crate::error::discard();
        }
    }

    thread_local! {
        static FREE_ON_EXIT: FreeOnExit = const { FreeOnExit };
    }

    pub(super) fn free_at_exit() {
        let _ = FREE_ON_EXIT.try_with(|_| ());
    }

    /// No `fork` here.
    pub(super) fn handle_fork() {}
}
