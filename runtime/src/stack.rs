//! Telling which calls recorded as running on a thread still have frames,
//! so the runtime survives calls that never return: a `longjmp` out of a
//! callback (libpng, Lua …), a forced unwind or a foreign exception.
//!
//! Every call writes a *token* into an [`Anchor`], a word in the
//! trampoline's frame, and the context records where that word is and
//! what it holds: a [`Mark`]. Nothing else writes a running call's anchor,
//! so **a mark whose word no longer holds its token belongs to a frame that
//! is gone**. Nested calls' tokens are unique ([`nested_token_block`]);
//! outermost calls share the context's token until one may leave its mark
//! behind (see `Context::advance`), so the fast path only reads it.
//!
//! Marks are checked only when a call starts while others are recorded,
//! and only those at or below the new call's anchor. Such a mark is gone
//! when (1) its token was overwritten, or (2) it and the new call are both
//! on the thread's own stack (`pthread_getattr_np`), where a running call
//! would be above. Any other is kept: it may be live on another stack
//! (`swapcontext`, a signal stack), and declaring a live frame gone would
//! hand out a second `&mut` to a `#[local]` value; it stays recorded until
//! a call that encloses it returns or the thread exits. Rule 2 assumes no
//! stack switched to from a callback is carved out of the thread's own
//! stack above it.

use core::cell::{Cell, UnsafeCell};
use core::mem::MaybeUninit;

use crate::sync::{AtomicU64, Ordering};

/// A word in a call's frame holding that call's token; uninitialised until
/// [`mark`](Anchor::mark) writes it.
pub(crate) struct Anchor(UnsafeCell<MaybeUninit<u64>>);

impl Anchor {
    #[hot_path]
    pub(crate) const fn new() -> Anchor {
        Anchor(UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// Writes `token` into the anchor and returns the mark that finds it.
    #[hot_path]
    pub(crate) fn mark(&self, token: u64) -> Mark {
        let word = self.0.get().cast::<u64>();
        // SAFETY: this anchor's own word. A plain write: the address escapes
        // into the context, so the token is in memory before anything reads it.
        unsafe { word.write(token) };
        Mark {
            address: word.expose_provenance(),
            token,
        }
    }

    /// The running call's mark, for a `#[local]` value it takes through the
    /// slot's state. Written again, volatile: the compiler may have dropped
    /// the first write (`context::Running`), and a signal handler may check.
    ///
    /// # Safety
    ///
    /// [`mark`](Anchor::mark) wrote the anchor (its call entered).
    #[hot_path]
    pub(crate) unsafe fn holder_mark(&self) -> Mark {
        // SAFETY: `mark` wrote the word (caller obligation).
        let mark = unsafe { self.current_mark() };
        // SAFETY: the anchor's own word, in a live frame.
        unsafe { self.0.get().cast::<u64>().write_volatile(mark.token) };
        mark
    }

    /// The running call's mark, read back, for a `Closure::new` turn. Not
    /// written again: where the compiler dropped the write, the call cannot be
    /// abandoned or suspended without a call it sees.
    ///
    /// # Safety
    ///
    /// [`mark`](Anchor::mark) wrote the anchor (its call entered).
    #[hot_path]
    pub(crate) unsafe fn current_mark(&self) -> Mark {
        let word = self.0.get().cast::<u64>();
        Mark {
            address: word.expose_provenance(),
            // SAFETY: `mark` initialised the word (caller obligation).
            token: unsafe { word.read() },
        }
    }
}

/// Where a running call's anchor is, and the token it wrote there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    address: usize,
    token: u64,
}

impl Mark {
    pub(crate) const fn new(address: usize, token: u64) -> Mark {
        Mark { address, token }
    }

    pub(crate) const fn address(self) -> usize {
        self.address
    }

    pub(crate) const fn token(self) -> u64 {
        self.token
    }

    /// True when the call that made this mark certainly has no frame left,
    /// seen from a new call marked `current` (the module's rules).
    pub(crate) fn is_gone(self, current: Mark, stack: &ThreadStack) -> bool {
        // Address 0: a leave cleared it, so a signal handler's call interrupted
        // this one before its entry: it runs.
        if self.address > current.address || self.address == 0 {
            return false;
        }
        // A coroutine's stack may have been freed: kept.
        if stack.is_elsewhere(self.address) {
            return false;
        }
        crate::valgrind::mark_defined(self.address, 8);
        // SAFETY: the address was an anchor on the thread's own stack, mapped
        // while the thread runs, or (bounds unknown) on a stack the contract
        // keeps mapped while the thread calls back (Known limits).
        if unsafe { read_word(self.address) } != self.token {
            return true;
        }
        stack.contains(self.address) && stack.contains(current.address)
    }
}

impl Mark {
    /// True when the call that made this mark, holding a `#[local]` value
    /// through the slot's state, certainly has no frame left, seen from the
    /// asking call `current`. Judged by its own mark, on the thread's own stack
    /// only (a coroutine's may be freed): below `current`, or overwritten.
    pub(crate) fn holder_is_gone(self, current: Mark, stack: &ThreadStack) -> bool {
        if !stack.contains(self.address) {
            return false;
        }
        if stack.contains(current.address) && self.address < current.address {
            return true;
        }
        crate::valgrind::mark_defined(self.address, 8);
        // SAFETY: an aligned anchor address on the thread's own stack, mapped
        // while the thread runs.
        unsafe { read_word(self.address) != self.token }
    }
}

/// Nested tokens per block: more than a context uses in a process's life.
pub(crate) const NESTED_TOKEN_BLOCK: u64 = 1 << 32;

static NESTED_TOKEN_BLOCKS: AtomicU64 = AtomicU64::new(NESTED_TOKEN_BLOCK);

/// The start of a new block of nested-call counts, above every block taken
/// before: a context's counts grow, and no two contexts share one.
pub(crate) fn nested_token_block() -> u64 {
    // Relaxed: only uniqueness matters.
    NESTED_TOKEN_BLOCKS.fetch_add(NESTED_TOKEN_BLOCK, Ordering::Relaxed)
}

/// The tokens of the last two nested calls a context found gone while
/// still recorded as running. A nested token names one call, which ended
/// nothing it held: a `Closure::new` turn it took is still its own
/// (`closure::turn_holder_is_gone`). Claimed with a compare-and-swap, as
/// a signal handler's call may claim too.
pub(crate) struct GoneCalls([AtomicU64; 2]);

impl GoneCalls {
    pub(crate) fn new() -> GoneCalls {
        GoneCalls(Default::default())
    }

    /// Remembers the nested call `token` as gone, over the older of the two.
    pub(crate) fn remember(&self, token: u64) {
        // Relaxed: only this thread's calls read the words. Counts grow, so the
        // smaller token is the older call's.
        let [first, second] = &self.0;
        let slot = if first.load(Ordering::Relaxed) <= second.load(Ordering::Relaxed) {
            first
        } else {
            second
        };
        slot.store(token, Ordering::Relaxed);
    }

    /// True, and forgotten, if `token` is remembered gone.
    pub(crate) fn claim(&self, token: u64) -> bool {
        // Acquire: the caller's reads after its claim (a turn's state) stay
        // after it.
        token != 0
            && self.0.iter().any(|remembered| {
                remembered
                    .compare_exchange(token, 0, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            })
    }
}

/// How many of the calls recorded as running (`recorded`, outermost first)
/// come before the first one certainly gone: those after it are nested in
/// it, and gone too.
pub(crate) fn live_calls(
    recorded: impl Iterator<Item = Mark>,
    current: Mark,
    stack: &ThreadStack,
) -> u32 {
    let mut live = 0;
    for mark in recorded {
        if mark.is_gone(current, stack) {
            break;
        }
        live += 1;
    }
    live
}

/// The owning thread's stack bounds, looked up on first need.
pub(crate) struct ThreadStack(Cell<Option<(usize, usize)>>);

impl ThreadStack {
    pub(crate) const fn new() -> ThreadStack {
        ThreadStack(Cell::new(None))
    }

    pub(crate) fn forget(&self) {
        self.0.set(None);
    }

    pub(crate) fn contains(&self, address: usize) -> bool {
        let (low, high) = self.bounds();
        (low..high).contains(&address)
    }

    /// True when the bounds are known and `address` is outside them: another
    /// stack of the thread, which may have been freed.
    pub(crate) fn is_elsewhere(&self, address: usize) -> bool {
        let (low, high) = self.bounds();
        low < high && !(low..high).contains(&address)
    }

    /// `[low, high)`; `(0, 0)` where the C library cannot tell.
    fn bounds(&self) -> (usize, usize) {
        match self.0.get() {
            Some(bounds) => bounds,
            None => {
                let bounds = imp::thread_stack().unwrap_or((0, 0));
                self.0.set(Some(bounds));
                bounds
            }
        }
    }
}

// glibc and musl both have `pthread_getattr_np` (Miri does not).
#[cfg(all(target_os = "linux", not(miri)))]
mod imp {
    use core::mem::MaybeUninit;

    /// `[low, high)` of the calling thread's stack, if the C library tells.
    pub(super) fn thread_stack() -> Option<(usize, usize)> {
        let mut attr = MaybeUninit::<libc::pthread_attr_t>::uninit();
        // SAFETY: `attr` is a valid out-pointer; on success it is
        // initialised and destroyed below.
        if unsafe { libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) } != 0 {
            return None;
        }
        let mut low = core::ptr::null_mut();
        let mut size = 0;
        // SAFETY: `attr` was initialised by `pthread_getattr_np`.
        let rc = unsafe { libc::pthread_attr_getstack(attr.as_ptr(), &mut low, &mut size) };
        // SAFETY: initialised above, destroyed once.
        let destroyed = unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
        debug_assert_eq!(destroyed, 0);
        (rc == 0).then(|| (low.addr(), low.addr() + size))
    }
}

#[cfg(any(not(target_os = "linux"), miri))]
mod imp {
    /// Unknown here: only overwritten tokens tell a call is gone.
    pub(super) fn thread_stack() -> Option<(usize, usize)> {
        None
    }
}

/// Reads the word at `address`, which may belong to a frame that is gone,
/// in assembly: to the compiler it is an opaque read of mapped memory, not
/// an access to a dead Rust local.
///
/// # Safety
///
/// `address` is 8-byte aligned and mapped readable.
#[inline]
unsafe fn read_word(address: usize) -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let value: u64;
        // SAFETY: a plain aligned load from mapped memory (caller
        // obligation); no stack use, flags preserved, nothing written.
        unsafe {
            core::arch::asm!(
                "mov {value}, qword ptr [{address}]",
                address = in(reg) address,
                value = out(reg) value,
                options(nostack, preserves_flags, readonly),
            );
        }
        value
    }
    #[cfg(all(target_arch = "aarch64", not(miri)))]
    {
        let value: u64;
        // SAFETY: as above.
        unsafe {
            core::arch::asm!(
                "ldr {value}, [{address}]",
                address = in(reg) address,
                value = out(reg) value,
                options(nostack, preserves_flags, readonly),
            );
        }
        value
    }
    #[cfg(any(miri, not(any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        // SAFETY: aligned and mapped (caller obligation); a volatile read
        // the compiler cannot drop or reorder.
        unsafe { core::ptr::with_exposed_provenance::<u64>(address).read_volatile() }
    }
}
