//! Attaching threads to contexts: the fast lookup of the calling thread's
//! context, the cold bind path, and the release that hands a context back
//! to the free list.
//!
//! A thread's first call pops a context (or allocates one) and stores it in
//! the thread's [`tls`] slot, which has no destructor — so the
//! fast path is one thread-local load and works at any point of thread
//! teardown — and in a pthread key whose destructor (on Windows, a
//! fiber-local-storage slot whose callback; both in
//! [`hooks`]) releases the context when the thread exits. A
//! thread that calls back *after* that release (from another key's
//! destructor, say) is served per call: it gets a context for the duration
//! of the outermost call only, so nothing leaks.
//!
//! A per-call context released on a thread stays in that thread's slot,
//! [cached](CACHES) for its next per-call attach, which then costs no
//! atomic operation.
//!
//! A context belongs to the thread it serves: the functions that act on it
//! as its owner are `unsafe`, and their callers vouch that the context is
//! the calling thread's.

use core::ptr;

use crate::context::{CONTEXTS, Context, ContextNode};
use crate::hint;
use crate::hooks;
use crate::settings::{self, AttachMode};
use crate::tls::{self, Slot};

/// The slot's value once the key destructor released the thread's bound
/// context: the thread is exiting, so later calls are served per call.
/// Also once a call returned on a thread that has no exit hook (the
/// process had no pthread key left), which is served per call too. (The
/// slot holds null, this marker, a context node serving the thread, or a
/// [cached](CACHES) one.)
const EXITED: *const ContextNode = ptr::without_provenance(1);

/// A per-call context is not handed back to the free list when its
/// outermost call returns: it stays in the slot, tagged as *cached* (no
/// thread is bound, but the next per-call attach on this thread takes it
/// without touching the free list). It counts as released. The key
/// destructor hands it back when the thread exits, and a thread whose
/// destructor ran never caches (its slot holds `EXITED`). Its `#[local]`
/// values are released, but for any that a callback from a signal handler
/// bound while the per-call fast path was caching it: those stay bound to
/// this thread until the context leaves it (see `release_at_exit`).
///
/// The tag is the top bit, which no user-space address has on x86-64, so a
/// cached value is negative as a signed number, as null and `EXITED` are
/// at most 1: [`current`] stays one compare. Elsewhere (top-byte pointer
/// tags exist on aarch64) nothing is cached.
const CACHES: bool =
    hooks::HAS_THREAD_EXIT_HOOK && cfg!(all(target_arch = "x86_64", target_pointer_width = "64"));

/// The tag of a cached context in the slot.
const CACHED_TAG: usize = 1 << (usize::BITS - 1);

/// The calling thread's identity among the threads alive: its
/// `pthread_self`, which is its descriptor's address on glibc and musl and
/// never 0 (a 0 maps to 1 anyway, so that 0 can mean *no thread*).
#[cfg(unix)]
pub(crate) fn id() -> usize {
    // SAFETY: `pthread_self` has no preconditions.
    let id = unsafe { libc::pthread_self() } as usize;
    id.max(1)
}

/// The calling thread's identity among the threads alive: the address of
/// a thread-local, never 0.
#[cfg(not(unix))]
pub(crate) fn id() -> usize {
    thread_local! {
        static ID: u8 = const { 0 };
    }
    ID.with(|id| core::ptr::from_ref(id).addr())
}

/// The context serving this thread, if any, for a call to run on (the
/// fast paths read the slot themselves).
///
/// A per-call context found with no call running on it is kept as a
/// bound one first ([`keep_for_interrupted_call`]): the call that attached
/// it was interrupted, and it alone may release it.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn current() -> Option<&'static ContextNode> {
    let node = serving()?;
    // SAFETY: `node` serves this thread, its owner.
    if unsafe { node.value.per_call() && node.value.is_idle() } {
        // SAFETY: as above.
        unsafe { keep_for_interrupted_call(node) };
    }
    Some(node)
}

/// The context serving this thread, if any, as the slot holds it.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn serving() -> Option<&'static ContextNode> {
    let node = tls::get();
    if !serves(node) {
        return None;
    }
    // SAFETY: values of the slot other than null, `EXITED` and cached ones
    // are nodes of `CONTEXTS` (the contract of `tls::set`), which are freed
    // only when the library is unloaded, when no thread runs its code.
    Some(unsafe { &*node })
}

/// For [`current`]: `node`, a per-call context in the slot with no call
/// on it, belongs to a call that the caller interrupted (a signal
/// handler's call) after its attach and before its entry, or after its
/// return and before its release. That call releases it; were the caller
/// to release it too, the interrupted call would run on, or release
/// again, a context already cached or handed back. So it becomes a bound
/// one, whose calls release nothing (`Context::leave`): the interrupted
/// call runs on it and the thread's exit releases it (its exit hook is
/// armed: [`bind`]), or that call releases it as it was about to ([`attach`]
/// makes it per call again when it comes back from the cache).
///
/// # Safety
///
/// `node` serves the calling thread, its owner, and no call runs on it.
#[cold]
#[inline(never)]
unsafe fn keep_for_interrupted_call(node: &'static ContextNode) {
    // SAFETY: forwarded caller obligation.
    unsafe { node.value.keep_bound() };
}

/// The slot's value, for [`serves`]: a node serving this thread when
/// `serves` says so. A raw value, so that the fast path's one compare is
/// its only check (an `Option<&_>` adds a null check the compiler does not
/// see is implied).
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn slot() -> *const ContextNode {
    tls::get()
}

/// True when the slot's `value` is a context serving the thread: then it
/// is a node of `CONTEXTS` that only this thread uses, and freed only when
/// the library is unloaded (the contract of `tls::set`).
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn serves(value: *const ContextNode) -> bool {
    if CACHES {
        // One signed compare: null, `EXITED` and the cached values (their
        // top bit set: negative) are all at most `EXITED`.
        value.addr() as isize > EXITED.addr() as isize
    } else {
        value.addr() > EXITED.addr()
    }
}

/// True when a context serves the calling thread or is cached for it:
/// something its exit hook must hand back.
#[cfg(windows)]
pub(crate) fn holds_context() -> bool {
    let seen = tls::get();
    serves(seen) || cached(seen).is_some()
}

/// The context cached in the slot's `value`, if it holds one.
#[inline]
fn cached(value: *const ContextNode) -> Option<&'static ContextNode> {
    if !CACHES || value.addr() & CACHED_TAG == 0 {
        return None;
    }
    // SAFETY: a tagged value is a node of `CONTEXTS` that `release` cached
    // for this thread; nodes are freed only when the library is unloaded.
    Some(unsafe { &*value.map_addr(|address| address & !CACHED_TAG) })
}

/// The slot's value that caches `node`.
fn tagged(node: &'static ContextNode) -> *const ContextNode {
    ptr::from_ref(node).map_addr(|address| address | CACHED_TAG)
}

/// The per-call fast path's attach: takes the context that `value`, read
/// from `slot`, caches, by clearing the slot's tag in one instruction (no
/// compare-and-swap where the target allows it); `None` when it caches
/// none, or the slot no longer does (the caller then takes the slow path).
///
/// The context taken is the one the slot caches at that instruction: a
/// signal handler that ran since `value` was read may have replaced it.
/// Its last attachment was per call on this very thread: its fields
/// already say so, and its exit hook is armed.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) fn take_cached(slot: &Slot, value: *const ContextNode) -> Option<&'static ContextNode> {
    cached(value)?;
    // SAFETY: a tagged slot value caches a node of `CONTEXTS` for this
    // thread, and untagged it is that node serving this thread, a value
    // `set` accepts: taking it from the cache makes it serve the thread.
    // The top bit is the tag (`CACHED_TAG`).
    let node = unsafe { slot.untag(value) }?;
    // SAFETY: the slot now holds this node of `CONTEXTS`, freed only when
    // the library is unloaded.
    let node = unsafe { &*node };
    node.value.binds.bump();
    Some(node)
}

/// The per-call fast path's release, through `slot`, where
/// [`take_cached`] took `node`: caches `node` again with one store when
/// it has no `#[local]` values, else releases it as [`leave`] does.
///
/// # Safety
///
/// As for `release`: `node` serves the calling thread, which gives it up,
/// and no call runs on it.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) unsafe fn release_cached(slot: &Slot, node: &'static ContextNode) {
    // SAFETY: this thread owns `node` (caller obligation).
    let plain = unsafe { !node.value.after_exit() && !node.value.locals.has_values() };
    if CACHES && plain {
        // Counted while this call still owns `node`: once it is cached, a
        // callback from a signal handler on this thread may take it and
        // count on it, and the count's load and store must not straddle
        // that (it is not one instruction in every build).
        node.value.releases.bump();
        // A plain store: nothing that interrupts this thread here changes
        // the slot for good (a callback from a signal handler finds `node`
        // idle, runs on it and leaves it so, never released: see
        // `keep_for_interrupted_call`; a `#[local]` value it bound stays
        // bound, for the thread's next release or its exit:
        // `release_at_exit`).
        // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for
        // this thread, which gives up the context until it takes it back.
        unsafe { slot.set(tagged(node)) };
        return;
    }
    // SAFETY: forwarded caller obligations.
    unsafe { release(node) };
}

/// Attaches the calling thread to a context: the slow path of a thread's
/// first call (or of every call in per-call mode).
///
/// A per-call attach takes the context the thread caches, if any: two
/// accesses to the slot and no atomic operation.
///
/// Re-entrant: if a call on this thread (a signal handler) binds the
/// thread while this one is popping a context, the slot is claimed with a
/// compare-and-swap, so exactly one context ends up bound: the loser's
/// context goes straight back to the free list.
///
/// Off the fast path already (its one caller, `boundary::arrive`, is
/// cold), so inlined there: one call and one frame less on a first call.
#[inline]
pub(crate) fn attach(attach: AttachMode) -> &'static ContextNode {
    let seen = tls::get();
    if attach == AttachMode::PerCall {
        if let Some(node) = claim_cached(seen) {
            // A nested call may have kept it as a bound one while its last
            // attachment was being released (`keep_for_interrupted_call`).
            // SAFETY: this thread owns `node`, just taken from its cache,
            // and no callback runs on it; a cached context never serves a
            // thread whose exit hook ran.
            unsafe { node.value.set_per_call(true, false, false) };
            return node;
        }
    }
    attach_slow(attach, seen)
}

/// [`attach`]'s take from the cache, which reaches the slot anew: the
/// context that the slot's `value` caches, by claiming the slot for it;
/// `None` when `value` caches none, or the slot no longer holds `value`.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn claim_cached(value: *const ContextNode) -> Option<&'static ContextNode> {
    let node = cached(value)?;
    // Its last attachment was per call on this very thread: its fields
    // already say so, and its exit hook is armed.
    // SAFETY: `node` is a node of `CONTEXTS`, and claiming it from the
    // cache makes it serve this thread.
    unsafe { tls::claim(value, node) }.ok()?;
    node.value.binds.bump();
    Some(node)
}

/// `attach` from a context of the free list (or a new one), or from the
/// cache when the thread becomes bound; `seen` is what the slot held.
///
/// Inlined into `attach`'s one caller, `boundary::arrive` (cold, out of
/// line): a thread's first call then runs one function's prologue less.
#[inline]
fn attach_slow(attach: AttachMode, mut seen: *const ContextNode) -> &'static ContextNode {
    if serves(seen) {
        // A nested call (a signal handler's) bound the thread since the
        // caller found it unbound: use its context, as below. Claiming the
        // slot over it would leave it bound for good, released by nothing.
        hint::rarely_taken();
        // SAFETY: a slot value that `serves` accepts is a node of
        // `CONTEXTS` serving this thread, freed only when the library is
        // unloaded.
        return unsafe { &*seen };
    }
    let mut reused = None;
    if let Some(node) = cached(seen) {
        // A thread that made per-call calls before its first bound one.
        hint::rarely_taken();
        // Out of the slot first, so a call from a signal handler cannot
        // take it from the cache meanwhile.
        // SAFETY: null is a slot value.
        if unsafe { tls::claim(seen, ptr::null()) }.is_err() {
            return attach_again(attach);
        }
        seen = ptr::null();
        reused = Some(node);
    }
    // A thread that no exit hook reaches (its key destructor ran already,
    // or the process had no pthread key or FLS index left for this copy of
    // the runtime) is served per call, and caches nothing: nothing would
    // hand a cached context back.
    let after_exit = ptr::eq(seen, EXITED) || !hooks::exit_hook_ready();
    let per_call = attach == AttachMode::PerCall || per_call_only(after_exit);
    let node = match reused {
        Some(node) => node,
        None => CONTEXTS.pop().unwrap_or_else(new_context),
    };
    // SAFETY: this thread owns `node`, which the cache, `pop` or `alloc`
    // just handed out, and no callback runs on it yet; `seen` is what the
    // slot held, and `node` came from the cache only if the slot held it
    // (it was taken out just above).
    if unsafe { bind(node, seen, per_call, after_exit, reused.is_none()) } {
        return node;
    }
    // A nested call bound the thread meanwhile: use its context.
    if let Some(bound) = serving() {
        return bound;
    }
    // The nested call's per-call context was released again.
    debug_assert!({
        let value = tls::get();
        ptr::eq(value, EXITED) || value.is_null() || cached(value).is_some()
    });
    attach_again(attach)
}

/// The attach of a thread's first call from a callback served on a bound
/// thread: binds the thread to a context for good, as [`attach`] does for
/// such a call, and returns it. `None` (having changed nothing) where that
/// attach would serve the call per call instead (no exit hook, or the
/// settings ask for it), or where a nested call bound the thread meanwhile
/// and left it per call: the caller then takes the slow path.
///
/// # Safety
///
/// The calling thread's slot held null (the thread was not bound, nothing
/// was cached) when this thread last read it, and this thread has not
/// called into the runtime since. A nested call (a signal handler's) that
/// bound the thread meanwhile makes the claim fail; its context is then
/// returned if it serves the thread.
#[inline]
pub(crate) unsafe fn bind_unbound() -> Option<&'static ContextNode> {
    if per_call_only(!hooks::exit_hook_ready()) {
        return None;
    }
    let node = CONTEXTS.pop().unwrap_or_else(new_context);
    // SAFETY: this thread owns `node`, which `pop` or `alloc` just handed
    // out, and no callback runs on it yet; the slot held null when this
    // thread last read it, with no call into the runtime since (caller
    // obligation), and `node` did not come from the cache.
    if unsafe { bind(node, ptr::null(), false, false, true) } {
        return Some(node);
    }
    serving()
}

/// True when an attach serves the calling thread per call whatever its
/// callback asks: the platform has no exit hook, no exit hook reaches the
/// thread (`after_exit`), or the settings ask for it.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
fn per_call_only(after_exit: bool) -> bool {
    !hooks::HAS_THREAD_EXIT_HOOK || after_exit || settings::current().attach == AttachMode::PerCall
}

/// Makes `node` serve the calling thread, whose slot held `seen`: records
/// how it serves the thread (`per_call`, `after_exit`; `new_thread` when
/// it did not come from this thread's cache), arms the exit hook and
/// claims the slot. False when a nested call (a signal handler) claimed
/// the slot first: `node` is back on the free list then.
///
/// # Safety
///
/// This thread owns `node`, which no callback runs on yet; `seen` is a
/// value the slot held since this thread last called into the runtime,
/// and `new_thread` is false only if `node` came from the slot's cache.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
unsafe fn bind(
    node: &'static ContextNode,
    seen: *const ContextNode,
    per_call: bool,
    after_exit: bool,
    new_thread: bool,
) -> bool {
    // SAFETY: this thread owns `node`, and no callback runs on it yet
    // (caller obligations).
    unsafe {
        debug_assert_eq!(node.value.depth(), 0);
        node.value.set_per_call(per_call, after_exit, new_thread);
    }
    // Armed before the slot is claimed: once claimed, a nested call may
    // use the context, and the destructor must find it if the thread ends
    // inside that call. A per-call context is armed too, for a thread that
    // ends (or jumps out) inside its outermost call.
    if per_call {
        if hooks::HAS_THREAD_EXIT_HOOK {
            hooks::arm_exit_hook();
        }
    } else {
        hooks::register_exit_hook(node);
    }
    // SAFETY: `node` is a node of `CONTEXTS` that serves this thread.
    if unsafe { tls::claim(seen, node) }.is_err() {
        hint::rarely_taken();
        if new_thread {
            // SAFETY: this thread owns `node`, which never served a call,
            // and gives it up.
            unsafe { CONTEXTS.push(node) };
        } else {
            // From this thread's cache, where a `#[local]` value may be
            // bound on it (see `release_at_exit`): released first.
            // SAFETY: this thread owns `node`, released when it was cached
            // (counted, no call runs on it, no `LocalRef` is alive, it
            // serves no thread whose exit hook ran), out of the slot; the
            // thread gives it up.
            unsafe { release_values(node, false, false) };
        }
        return false;
    }
    node.value.binds.bump();
    true
}

/// A new context, for an attach that found the free list empty.
#[cold]
#[inline(never)]
fn new_context() -> &'static ContextNode {
    let node = CONTEXTS.alloc(Context::new());
    // SAFETY: `alloc` just made `node`, so this thread owns it and no
    // callback runs on it.
    unsafe { node.value.reserve_nested() };
    node
}

/// `attach` lost its claim to a nested per-call attachment that has been
/// released since: start over (rare, so a plain recursion).
#[cold]
fn attach_again(mode: AttachMode) -> &'static ContextNode {
    attach_slow(mode, tls::get())
}

/// A call returned on `node`'s thread; releases it if it was the outermost
/// call of a per-call attachment.
///
/// # Safety
///
/// - `node` serves the calling thread: `current` or `attach` returned it on
///   this thread, and it was not released since.
/// - The call that is returning entered `node` with `Context::enter`,
///   which returned `start`, and has not left it yet.
/// - The caller does not use `node` afterwards: it may have been released.
#[cfg_attr(not(callgate_unoptimized), inline(always))]
pub(crate) unsafe fn leave(node: &'static ContextNode, start: u32) {
    // SAFETY: `node` serves this thread, and this pairs with the `enter` of
    // the returning call (caller obligations).
    if unsafe { node.value.leave(start) } {
        // SAFETY:
        // - `node` serves this thread, and the caller gives it up;
        // - the outermost call just left it, so no call runs on it and no
        //   `LocalRef` into its locals is alive.
        unsafe { release(node) };
    }
}

/// The runtime's key destructor runs on an exiting thread: releases the
/// context serving it, if any, hands a cached one back, and serves any
/// later call on the thread per call.
///
/// Exact whatever the thread's calls did: the destructor runs after the
/// thread function returned or after `pthread_exit`/cancellation finished
/// unwinding, so none of the thread's frames remain. Calls recorded as
/// running had their frames abandoned (a `longjmp`, or a forced unwind
/// that skipped the trampoline's Rust frames): they are forgotten, their
/// `#[local]` values freed and released. This also releases a per-call
/// context whose outermost call never returned. Returns what the context's
/// hazard word announced (0 for nothing): an abandoned call's, whose hold
/// the caller ends (`closure::end_hold`).
///
/// # Safety
///
/// Runs on the exiting thread, from its key destructor.
#[must_use]
pub(crate) unsafe fn release_at_exit() -> usize {
    // First: a callback that a `Local::release` below makes is served per
    // call, and nothing is cached from now on.
    let seen = mark_exited();
    if let Some(node) = cached(seen) {
        // Its `#[local]` values are released first: a callback from a
        // signal handler may have bound one while the per-call fast path
        // was caching it (see `release_cached`).
        // SAFETY: the cache owned `node` for this thread, released already
        // (counted, no call runs on it, no `LocalRef` is alive, it serves
        // no thread whose exit hook ran); the slot no longer holds it, so
        // this thread gives it up.
        unsafe { release_values(node, false, false) };
    } else if serves(seen) {
        // SAFETY: the slot held it, so it is a node of `CONTEXTS` serving
        // this thread (the contract of `tls::set`).
        let node = unsafe { &*seen };
        // SAFETY:
        // - `node` serves this thread;
        // - the thread is in its key destructor: its callbacks all
        //   returned or were abandoned, no `LocalRef` can be used again.
        let withdrawn = unsafe { node.value.forget_all_calls() };
        // SAFETY:
        // - `node` serves this thread, which is exiting and never uses it
        //   again as its owner (a later call attaches per call);
        // - its depth is now 0 and no `LocalRef` is alive.
        unsafe { release(node) };
        return withdrawn;
    }
    0
}

/// Stores `EXITED` in the slot and returns what it replaced, in one claim:
/// a call from a signal handler that bound the thread, or took its cached
/// context, between a read and a store would leave that context with
/// neither the slot nor the exit hook to release it.
#[cold]
fn mark_exited() -> *const ContextNode {
    let mut seen = tls::get();
    loop {
        // SAFETY: `EXITED` is one of the slot's values.
        match unsafe { tls::claim(seen, EXITED) } {
            Ok(()) => return seen,
            Err(found) => seen = found,
        }
    }
}

/// Hands `node` back: runs `Local::release` on its values, detaches the
/// thread and caches the context in the slot or pushes it onto the free
/// list.
///
/// # Safety
///
/// - `node` serves the calling thread, which gives it up: nothing uses it
///   as its owner afterwards (but for the next attach, if it is cached).
/// - No call runs on it (its depth is 0), so no `LocalRef` into its locals
///   is alive.
///
/// `extern "C"`, so that the compiler knows it does not unwind (a panic of
/// a `Local::release` is caught inside): a per-call trampoline that calls
/// it needs no landing pad and no LSDA, so a forced unwind (`pthread_exit`,
/// cancellation) passes through its frame in release builds.
#[cold]
#[inline(never)]
#[allow(improper_ctypes_definitions, reason = "called from Rust only")]
unsafe extern "C" fn release(node: &'static ContextNode) {
    // SAFETY: this thread owns `node`, whose outermost call returned (or
    // the thread is exiting: then no value is held any more).
    if unsafe {
        node.value.forgotten_may_resume()
            || node.value.locals.has_values() && node.value.held_past_the_outermost_call()
    } && ptr::eq(tls::get(), node)
    {
        // A callback that started inside the outermost call on another
        // stack may be suspended there (holding a value): releasing would
        // hand the context (and the value) to others while that call may
        // resume. The context stays attached, as a bound one, until the
        // thread exits (its exit hook is armed: `attach_slow`).
        // SAFETY: this thread owns `node`.
        unsafe { node.value.keep_bound() };
        return;
    }
    // Counted first, while this call still owns `node`: as in
    // `release_cached`, a cached context may be taken by a callback
    // from a signal handler, which counts on it too.
    node.value.releases.bump();
    // SAFETY: this thread owns `node` (caller obligation).
    let after_exit = unsafe { node.value.after_exit() };
    // SAFETY: as above.
    if CACHES && !after_exit && !unsafe { node.value.locals.has_values() } {
        // No `Local::release` to run, so nothing can come in between:
        // cache it with one compare-and-swap of the slot, which fails only
        // if the slot does not hold `node` (the key destructor detached it).
        // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for
        // this thread, which gives up the context until it takes it back.
        if unsafe { tls::claim(node, tagged(node)) }.is_ok() {
            return;
        }
    }
    let attached = ptr::eq(tls::get(), node);
    // SAFETY: forwarded caller obligations.
    unsafe { release_values(node, attached, after_exit) };
}

/// `release` of a context that has `#[local]` values, or that cannot be
/// cached. The thread is detached first, so a callback that a
/// `Local::release` makes attaches a context of its own rather than use
/// the one being released.
///
/// # Safety
///
/// As for `release`, which counted the release; `attached` says whether
/// the slot holds `node`, and `after_exit` is `node`'s.
#[cold]
#[inline(never)]
unsafe fn release_values(node: &'static ContextNode, attached: bool, after_exit: bool) {
    if attached {
        // SAFETY: null and `EXITED` are slot values.
        unsafe { tls::set(if after_exit { EXITED } else { ptr::null() }) };
    }
    // The context has left the slot but is still this thread's: a `fork`
    // from a `Local::release` must leave it to the child's thread, which
    // goes on with this release (`reclaim_orphans`).
    // SAFETY: for all three, this thread owns the context and no
    // `LocalRef` is alive (caller obligations).
    unsafe {
        node.value.set_releasing(id());
        node.value.locals.release_all();
        node.value.set_releasing(0);
    }
    // Cached only if nothing attached meanwhile (a callback from a
    // `Local::release`, or from a signal handler), with one claim: a
    // context such a call bound between a look at the slot and a store
    // would be overwritten, bound for good.
    // SAFETY: a tagged node of `CONTEXTS` is a slot value, cached for this
    // thread, which gives up the context until it takes it back.
    if CACHES && attached && !after_exit && unsafe { tls::claim(ptr::null(), tagged(node)) }.is_ok()
    {
        return;
    }
    // SAFETY: this thread owns `node`, which `attach` took from `CONTEXTS`
    // or its cache (it was not pushed since: only a release pushes it, and
    // a cached context is pushed only once it left the slot), and gives it
    // up; no call runs on it (caller obligations).
    unsafe { hand_back(node) };
}

/// Pushes `node`, which served this thread, back onto the free list, its
/// calls recorded as over for the next owner ([`Context::give_up`]).
///
/// # Safety
///
/// This thread owns `node`, which is not on the free list, and gives it
/// up: no call runs on it, and nothing uses it as its owner afterwards.
unsafe fn hand_back(node: &'static ContextNode) {
    // SAFETY: forwarded caller obligations.
    unsafe {
        node.value.give_up();
        CONTEXTS.push(node);
    }
}

/// What the calls of the threads a `fork` left behind held, which will
/// never be given up in the child unless the child gives them up for them
/// ([`reclaim_orphans`]).
#[cfg(unix)]
pub(crate) struct LeftBehind {
    /// What their contexts' hazard words announced (see
    /// `closure::end_hold`).
    pub(crate) announced: Vec<usize>,
    /// The references their contexts recorded (see `sync::HeldRefs`):
    /// `(closure, turn, mark)`, with the turn a call waited for (or 0) and
    /// the mark of its thread (see `closure::give_up_left_behind`).
    pub(crate) held: Vec<(usize, usize, usize)>,
}

/// In a `fork` child: returns every context that is neither free nor
/// serving (or cached by) this, the only, thread to the free list. Their
/// `#[local]` values are abandoned: the threads they served are gone, so
/// neither `release` nor `Drop` runs for them. Returns what those threads'
/// calls held, which will never be given up: their hazard words'
/// announcements and the references their contexts recorded, which the
/// caller gives up (`closure::end_hold`, `closure::give_up_left_behind`).
///
/// A context whose thread was inside a call stays off the free list: that
/// call may hold `Closure::new` turns under the context's address, which
/// the child's calls take over (`sync::orphan_marks`) only because no
/// thread gets that address as its mark again. (A context each such
/// thread, for the rest of the child's life.)
///
/// # Safety
///
/// The caller is the only thread of a `fork` child (the `fork` child
/// handler): the contexts that served the parent's other threads have no
/// owner left.
#[cfg(unix)]
#[cold]
#[must_use]
pub(crate) unsafe fn reclaim_orphans() -> LeftBehind {
    // The context this thread caches is its own too, and so is one it was
    // releasing the values of when it forked (from a `Local::release`).
    let own = serving()
        .or_else(|| cached(tls::get()))
        .map(|node| node.index());
    let me = id();
    let mut free = vec![false; CONTEXTS.allocated()];
    for index in CONTEXTS.free_indices() {
        if let Some(slot) = free.get_mut(index as usize) {
            *slot = true;
        }
    }
    let mut left = LeftBehind {
        announced: Vec::new(),
        held: Vec::new(),
    };
    let mut left_in_calls = Vec::new();
    for node in CONTEXTS.iter() {
        let index = node.index();
        // SAFETY: this is the only thread of the child (caller obligation).
        let releasing = unsafe { node.value.releasing() };
        // A context an earlier fork left out of use (below) stays so: its
        // address is still an orphaned mark.
        let mark = core::ptr::from_ref(node).addr();
        if Some(index) == own
            || releasing == me
            || free.get(index as usize).copied().unwrap_or(false)
            || crate::sync::is_orphaned(mark)
        {
            continue;
        }
        // SAFETY: this is the only thread of the child (caller obligation),
        // and `node` serves no thread of it.
        let in_a_call = unsafe { node.value.may_be_in_a_call() };
        // SAFETY: as above.
        let withdrawn = unsafe { node.value.reset_orphan() };
        if withdrawn != 0 {
            left.announced.push(withdrawn);
        }
        // SAFETY: as above: the thread whose calls recorded them is gone.
        unsafe {
            node.value
                .held
                .take_left(|object, turn| left.held.push((object, turn, mark)));
        }
        if in_a_call {
            left_in_calls.push(mark);
            continue;
        }
        // SAFETY: `node` is neither free nor serving a thread, so the only
        // thread owns it, and gives it up here.
        unsafe { CONTEXTS.push(node) };
    }
    // SAFETY: the only thread of the child; the contexts of these marks
    // are kept off the free list for good, so no thread uses their marks
    // (a context's address, `boundary::Frame::thread_mark`) again.
    unsafe { crate::sync::orphan_marks(&left_in_calls) };
    left
}

/// Frees every context of the pool: the library is being unloaded.
///
/// # Safety
///
/// No thread is bound or runs the library's code, and none will until it
/// is unloaded: every context is free, and nothing pops one again.
#[cold]
// Only the ELF unload hook (Linux, Android) frees the pool and the
// messages.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub(crate) unsafe fn free_pool() {
    // SAFETY: forwarded caller obligation.
    unsafe { CONTEXTS.free_all() };
}

#[cfg(all(test, not(callgate_loom)))]
mod tests;
