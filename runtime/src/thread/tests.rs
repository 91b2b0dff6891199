use core::ptr;

use super::attach::claim_cached;
use super::{attach, current, leave};
use crate::settings::AttachMode;
use crate::stack::Anchor;
use crate::tls;

/// Runs `body` on a new thread, whose exit hook then releases what it
/// holds.
fn on_a_new_thread(body: impl FnOnce() + Send + 'static) {
    std::thread::spawn(body)
        .join()
        .expect("the thread's body passed");
}

/// A signal handler's call bound the thread between the slow path's
/// look at the slot (nothing serving) and its per-call attach: the
/// attach uses the bound context rather than claim the slot over it.
#[test]
fn a_per_call_attach_uses_the_context_a_nested_call_bound_meanwhile() {
    on_a_new_thread(|| {
        let bound = attach(AttachMode::Bound);
        let attached = attach(AttachMode::PerCall);
        assert!(ptr::eq(attached, bound), "a second context attached");
        assert!(
            ptr::eq(tls::get(), bound),
            "the bound context left the slot"
        );
    });
}

/// A signal handler's call finds the per-call context that the call
/// it interrupted attached and has not entered yet: it runs on it and
/// leaves it attached, for the interrupted call to run on.
#[test]
fn a_call_on_a_per_call_context_not_entered_yet_leaves_it_attached() {
    on_a_new_thread(|| {
        let attached = attach(AttachMode::PerCall);
        let found = current().expect("the per-call context serves the thread");
        assert!(ptr::eq(found, attached));
        let anchor = Anchor::new();
        // SAFETY: `found` serves this thread, and the call enters and
        // leaves it with `anchor`, which outlives the call.
        unsafe {
            let start = found.value.enter(&anchor);
            leave(found, start);
        }
        assert!(
            ptr::eq(tls::get(), attached),
            "released under the interrupted call"
        );
        // The interrupted call runs on it.
        // SAFETY: as above.
        unsafe {
            let start = attached.value.enter(&anchor);
            leave(attached, start);
        }
    });
}

/// A signal handler's call bound the thread after the per-call fast
/// path read the slot (a cached context, or nothing): the fast path's
/// take from the cache fails, and the call runs on the bound context
/// and leaves it bound, attached once.
#[test]
fn a_take_from_the_cache_after_a_nested_bind_leaves_the_thread_bound() {
    on_a_new_thread(|| {
        let cached = attach(AttachMode::PerCall);
        let anchor = Anchor::new();
        // SAFETY: `cached` serves this thread, and the call enters and
        // leaves it with `anchor`, which outlives the call.
        unsafe {
            let start = cached.value.enter(&anchor);
            leave(cached, start);
        }
        let seen = tls::get();
        let bound = attach(AttachMode::Bound);
        assert!(claim_cached(seen).is_none(), "taken over the bound context");
        let found = current().expect("the bound context serves the thread");
        assert!(ptr::eq(found, bound));
        // SAFETY: as above.
        unsafe {
            let start = found.value.enter(&anchor);
            leave(found, start);
        }
        assert!(ptr::eq(tls::get(), bound), "the bound context was released");
        assert_eq!(bound.value.binds.get() - bound.value.releases.get(), 1);
    });
}

/// Every claim of the slot is one step for a signal handler on the
/// thread: a handler that changes the slot between a claim's look and
/// its store would be overwritten, and the context it bound or cached
/// lost. A thread claims its slot over and over while another sends it
/// signals whose handler adds one to it; no addition may be lost.
#[test]
#[cfg(unix)]
#[cfg_attr(miri, ignore = "no signals under Miri")]
fn a_signal_handler_never_lands_inside_a_claim() {
    use core::cell::Cell;
    use std::sync::Once;
    use std::sync::atomic::{AtomicBool, Ordering, compiler_fence};
    use std::time::{Duration, Instant};

    /// One claim's step: the handler's additions stay below it.
    const STEP: usize = 1 << 24;
    std::thread_local! {
        static ARMED: Cell<bool> = const { Cell::new(false) };
        static HANDLED: Cell<usize> = const { Cell::new(0) };
    }
    extern "C" fn add_one(_signal: libc::c_int) {
        if ARMED.with(Cell::get) {
            // SAFETY: the slot holds a count, which nothing reads as a
            // context on this thread.
            unsafe { tls::set(tls::get().wrapping_byte_add(1)) };
            HANDLED.with(|handled| handled.set(handled.get() + 1));
        }
    }
    // Installed once and left: it does nothing on other threads.
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: a zeroed `sigaction` is a valid one to fill in;
        // `add_one` only touches thread-locals without destructors.
        unsafe {
            let mut action: libc::sigaction = core::mem::zeroed();
            action.sa_sigaction = add_one as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            let rc = libc::sigaction(libc::SIGUSR2, &action, ptr::null_mut());
            assert_eq!(rc, 0);
        }
    });

    on_a_new_thread(|| {
        // SAFETY: no preconditions.
        let target = unsafe { libc::pthread_self() } as usize;
        let stop = AtomicBool::new(false);
        let claims = std::thread::scope(|scope| {
            scope.spawn(|| {
                // Relaxed: a stop flag, which publishes nothing.
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: the target thread outlives this scope.
                    let rc =
                        unsafe { libc::pthread_kill(target as libc::pthread_t, libc::SIGUSR2) };
                    assert_eq!(rc, 0);
                    std::thread::yield_now();
                }
            });
            ARMED.with(|armed| armed.set(true));
            let deadline = Instant::now() + Duration::from_secs(5);
            let mut claims = 0;
            while HANDLED.with(Cell::get) < 1_000 && Instant::now() < deadline {
                for _ in 0..1_000 {
                    let seen = tls::get();
                    // A claim reads the slot again, as in the runtime,
                    // where code runs between: the compiler may not
                    // fold this read and the claim into one instruction.
                    compiler_fence(Ordering::SeqCst);
                    // SAFETY: the slot holds counts on this thread,
                    // which makes no call into the runtime.
                    if unsafe { tls::claim(seen, seen.wrapping_byte_add(STEP)) }.is_ok() {
                        claims += 1;
                    }
                }
            }
            // Relaxed: as above.
            stop.store(true, Ordering::Relaxed);
            claims
        });
        ARMED.with(|armed| armed.set(false));
        let slot = tls::get().addr();
        // SAFETY: null is a slot value.
        unsafe { tls::set(ptr::null()) };
        let handled = HANDLED.with(Cell::get);
        assert!(handled > 0, "no signal handled");
        assert_eq!(slot / STEP, claims, "a claim was lost");
        assert_eq!(slot % STEP, handled, "a claim overwrote a handler's store");
    });
}
