//! Telling which calls recorded as running on a thread still have frames,
//! so the runtime survives calls that never return: a `longjmp` out of a
//! callback (libpng, libjpeg, Lua …), a forced unwind (`pthread_exit`,
//! cancellation) or a foreign exception that skips the Rust frames.
//!
//! Every call writes a *token* into an [`Anchor`], a word in the
//! trampoline's own frame, and the context records where that word is and
//! what it holds: a [`Mark`]. Nothing else writes a running call's anchor,
//! so **a mark whose word no longer holds its token belongs to a frame that
//! is gone**: its memory was reused.
//!
//! A nested call's token is unique in the process ([`nested_token_block`]).
//! Outermost calls that follow one another share the context's outermost
//! token, which advances wherever a call may leave behind something that
//! keeps its mark: a call still recorded when the next one starts, a nested
//! call or a `#[local]` lookup inside one, the context changing hands. So a
//! mark still checked never shares its token with a later call, and the
//! fast path only reads the token.
//!
//! Marks are checked only when a call starts while others are recorded
//! (the cold nested entry), and only those at or below the new call's
//! anchor: an outer call on the same stack is above. Such a mark is gone
//! when
//!
//! 1. its token was overwritten (whatever stack it is on), or
//! 2. it and the new call are both on the thread's own stack (the bounds
//!    `pthread_getattr_np` reports): a running call there would be above.
//!
//! Any other is kept: it may be live on another stack (`swapcontext`, a
//! signal stack), and declaring a live frame gone would hand out a second
//! `&mut` to a `#[local]` value. It stays recorded until a call that
//! encloses it returns or the thread exits, and its `#[local]` values
//! report "already in use" meanwhile.
//!
//! Rule 2 assumes that a stack switched to from inside a callback is not
//! carved out of the thread's own stack above that callback (a
//! `makecontext` stack in a frame further up).

use core::cell::{Cell, UnsafeCell};
use core::mem::MaybeUninit;

use crate::sync::{AtomicU64, Ordering};

/// A word in a call's frame holding that call's token. Uninitialised until
/// [`mark`](Anchor::mark) writes it: no store is spent on a placeholder.
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
        // SAFETY: `word` points to this anchor's own word. A plain write:
        // the address escapes into the context, so the token is in memory
        // before any call that could read it (see `context::Running`).
        unsafe { word.write(token) };
        Mark {
            address: word.expose_provenance(),
            token,
        }
    }

    /// The mark of the running call whose anchor this is, for a
    /// `#[local]` value it takes through the slot's state (see
    /// [`Mark::holder_is_gone`]). Written again, volatile: the compiler may
    /// have dropped the call's own write, and a signal handler's call may
    /// check the hold.
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

    /// The mark [`mark`](Anchor::mark) made, read back, for something the
    /// call takes that outlives it if abandoned (a `Closure::new` turn).
    /// Not written again: where the compiler dropped the write, the call
    /// cannot be abandoned or suspended without a call it sees.
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
    /// The mark of a call whose anchor is at `address` and holds `token`.
    pub(crate) const fn new(address: usize, token: u64) -> Mark {
        Mark { address, token }
    }

    /// Where the anchor is.
    pub(crate) const fn address(self) -> usize {
        self.address
    }

    /// The token the call wrote there.
    pub(crate) const fn token(self) -> u64 {
        self.token
    }

    /// True when the call that made this mark certainly has no frame left,
    /// seen from a new call marked `current` (the rules of the module).
    pub(crate) fn is_gone(self, current: Mark, stack: &ThreadStack) -> bool {
        // Address 0: a leave cleared the mark: a signal handler's call
        // that interrupted this one before its entry word. It is running.
        if self.address > current.address || self.address == 0 {
            return false;
        }
        // On a coroutine's stack, which may have been freed: not read,
        // and kept.
        if stack.is_elsewhere(self.address) {
            return false;
        }
        crate::valgrind::mark_defined(self.address, 8);
        // SAFETY: the address is a word that was an anchor, on the thread's
        // own stack, which stays mapped while the thread runs, or (off
        // Linux, where the bounds are unknown) on a stack the contract
        // keeps mapped while the thread calls back (see Known limits).
        if unsafe { read_word(self.address) } != self.token {
            return true;
        }
        stack.contains(self.address) && stack.contains(current.address)
    }
}

impl Mark {
    /// True when the call that made this mark, and took a `#[local]`
    /// value through the slot's state, certainly has no frame left, seen
    /// from a running call marked `current` that asks for the value.
    ///
    /// A hold outlives the record of its call (which may be forgotten while
    /// suspended on another stack), so it is judged by its own mark alone,
    /// and only on the thread's own stack, which stays mapped: gone when it
    /// lies below `current` there, or its token was overwritten. Elsewhere,
    /// or where the bounds are unknown, it is kept.
    pub(crate) fn holder_is_gone(self, current: Mark, stack: &ThreadStack) -> bool {
        if !stack.contains(self.address) {
            return false;
        }
        if stack.contains(current.address) && self.address < current.address {
            return true;
        }
        crate::valgrind::mark_defined(self.address, 8);
        // SAFETY: an anchor's address on the thread's own stack, which
        // stays mapped while the thread runs; 8-byte aligned (an `u64`).
        unsafe { read_word(self.address) != self.token }
    }
}

/// How many nested tokens a context hands out from one block: a count no
/// context reaches in the life of a process.
pub(crate) const NESTED_TOKEN_BLOCK: u64 = 1 << 32;

/// The start of the next block of nested tokens (see
/// [`nested_token_block`]).
static NESTED_TOKEN_BLOCKS: AtomicU64 = AtomicU64::new(NESTED_TOKEN_BLOCK);

/// A block of nested-call counts for a context that used up its own (or
/// has none yet): `start + 1` up to the next multiple of
/// [`NESTED_TOKEN_BLOCK`], from `start`, a non-zero multiple of it above
/// every block taken before. So a context's counts keep growing and no
/// two contexts share one.
pub(crate) fn nested_token_block() -> u64 {
    // Relaxed: only the count's uniqueness matters, which every
    // read-modify-write of it gives.
    NESTED_TOKEN_BLOCKS.fetch_add(NESTED_TOKEN_BLOCK, Ordering::Relaxed)
}

/// The tokens of the last nested calls that a context found certainly
/// gone while still recorded as running. A nested token names one call in
/// the process, which ended nothing it held: a `Closure::new` turn it took
/// is still its own (see `closure::turn_holder_is_gone`).
///
/// Two of them, the older forgotten first: the call that took a turn is
/// usually the last one a jump abandoned, or the one before.
///
/// Used by the context's owner only, and by signal handlers' calls on it:
/// a claim is one compare-and-swap, so two calls cannot both claim one.
pub(crate) struct GoneCalls([AtomicU64; 2]);

impl GoneCalls {
    pub(crate) fn new() -> GoneCalls {
        GoneCalls(Default::default())
    }

    /// Remembers that the nested call whose token is `token` is certainly
    /// gone. (Only nested tokens: an outermost call's is shared by the
    /// calls that follow it, so it names no one call.)
    pub(crate) fn remember(&self, token: u64) {
        // Relaxed, here and in the stores: only calls of this thread read
        // the words (see `claim`). Counts grow, so the smaller token is
        // the older call's.
        let [first, second] = &self.0;
        let slot = if first.load(Ordering::Relaxed) <= second.load(Ordering::Relaxed) {
            first
        } else {
            second
        };
        slot.store(token, Ordering::Relaxed);
    }

    /// True, and forgotten, if `token` is that of a call remembered gone.
    pub(crate) fn claim(&self, token: u64) -> bool {
        // Acquire: what the caller reads after its claim (a turn's state)
        // is read after it, also as a signal handler's call on this
        // thread may see it.
        token != 0
            && self.0.iter().any(|remembered| {
                remembered
                    .compare_exchange(token, 0, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            })
    }
}

/// How many of the calls recorded as running (`recorded`, outermost first)
/// may still be running, seen from a new call marked `current`: the calls
/// before the first one that is certainly gone. A call nested in a gone
/// call is gone too, so the ones after it are dropped with it.
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

/// The bounds of the owning thread's own stack, looked up on first need
/// and kept until the context serves another thread.
pub(crate) struct ThreadStack(Cell<Option<(usize, usize)>>);

impl ThreadStack {
    pub(crate) const fn new() -> ThreadStack {
        ThreadStack(Cell::new(None))
    }

    /// Forgets the bounds: the context serves a new thread.
    pub(crate) fn forget(&self) {
        self.0.set(None);
    }

    pub(crate) fn contains(&self, address: usize) -> bool {
        let (low, high) = self.bounds();
        (low..high).contains(&address)
    }

    /// True when the bounds are known and `address` lies outside them: on
    /// another stack of the thread (a coroutine's), which may have been
    /// freed since.
    pub(crate) fn is_elsewhere(&self, address: usize) -> bool {
        let (low, high) = self.bounds();
        low < high && !(low..high).contains(&address)
    }

    /// `[low, high)`, looked up on first need; `(0, 0)` where the C
    /// library cannot tell.
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

    /// `[low, high)` of the calling thread's stack, or `None` if the C
    /// library cannot tell.
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
