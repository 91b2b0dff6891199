//! Telling which calls recorded as running on a thread still have frames,
//! so the runtime survives calls that never return: C that `longjmp`s out
//! of a callback (the error handling of libpng, libjpeg, Lua …), a forced
//! unwind (`pthread_exit`, cancellation) or a foreign exception that skips
//! the callback's Rust frames.
//!
//! Every call writes a *token* into an [`Anchor`], a word in the
//! trampoline's own frame, and the context records where that word is and
//! what it holds: a [`Mark`]. A running call's anchor is never written by
//! anything else, so **a mark whose word no longer holds its token belongs
//! to a frame that is gone**: its memory was reused.
//!
//! A nested call's token is new, and no other call in the process has it
//! (a count of the context's nested calls, in blocks the contexts take
//! from one shared count: [`nested_token_block`]).
//! An outermost call's is the context's outermost token, which calls that
//! follow one another share for as long as each leaves nothing behind
//! that keeps its mark: the token advances before the next outermost call
//! wherever one may have — a call still recorded as running when the next
//! one starts (abandoned), a call inside which a nested call started or a
//! `#[local]` value was looked up (a hold that may outlive it: the token
//! advances then and there, the running call keeping its own), and the
//! context changing hands. So a mark that is still checked never shares
//! its token with a later call of the context, and the fast path reads the
//! token without writing it.
//!
//! Where nothing can read the token or the mark before the call returns
//! (a body that calls and writes nothing the compiler cannot see), the
//! compiler drops both (see `context::Running`): no call can start inside
//! that call, and its frame cannot be abandoned.
//!
//! Marks are only checked when a call starts while others are recorded as
//! running (the cold nested entry), and only marks at or below the new
//! call's own anchor are candidates: a running outer call on the same
//! stack is always strictly above its nested calls, so the marks above are
//! the normal nesting and cost nothing. A candidate is gone when
//!
//! 1. its token was overwritten (its memory was reused: true whatever
//!    stack it is on), or
//! 2. it and the new call are both on the thread's own stack (the bounds
//!    `pthread_getattr_np` reports): a running call there would be above
//!    the new one, so a call at or below it has no frame left.
//!
//! Any other candidate is kept (treated as running): it may be live on
//! another stack (`swapcontext`, a signal stack), and declaring a live
//! frame gone would hand out a second `&mut` to a `#[local]` value. That
//! is the case of a host that abandons a callback running on a coroutine
//! stack and calls again from another stack: the abandoned call stays
//! recorded until a call that encloses it returns (`leave` restores the
//! depth that call started at) or the thread exits (the key destructor
//! forgets every call: no frame of an exiting thread remains), and its
//! `#[local]` values report "already in use" meanwhile.
//!
//! Rule 2 assumes that a stack switched to from inside a callback is not
//! carved out of the thread's own stack *above* that callback (a
//! `makecontext` stack in an array of a frame further up): such a stack
//! must not call back while the callback below it is suspended.

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
        // before any call that could read it (`read_word`, from a nested
        // callback); where nothing can, the compiler may drop it (see
        // `context::Running`).
        unsafe { word.write(token) };
        Mark {
            address: word.expose_provenance(),
            token,
        }
    }

    /// The mark of the running call whose anchor this is, for a
    /// `#[local]` value it takes through the slot's state (see
    /// [`Mark::holder_is_gone`]). The token goes to memory again with a
    /// volatile write: the compiler may have dropped the call's own write
    /// (see `context::Running`), and the hold is checked against it by
    /// calls the compiler does not see coming (a signal handler's).
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

    /// The mark [`mark`](Anchor::mark) made, read back: for something the
    /// running call takes that outlives it if the call is abandoned (a
    /// `Closure::new` turn; see `Frame::mark`). Unlike
    /// [`holder_mark`](Anchor::holder_mark) it does not write the token
    /// again: where the compiler dropped the call's own write, nothing the
    /// call runs can leave it (abandon it, or suspend it on another stack)
    /// without the compiler seeing a call out, so whenever the mark is
    /// checked while its call has a frame, the token is in memory.
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
        // Address 0: the outermost call's mark as a call's leave clears it
        // (`context::Running`). A call recorded as running with it is one
        // that a signal handler's call interrupted after it recorded its
        // mark and before its entry word: the handler's call found the
        // context idle, and its leave cleared the mark. That call is
        // running, and is kept.
        if self.address > current.address || self.address == 0 {
            return false;
        }
        // On a coroutine's stack, which the host may have freed since a
        // call there was abandoned (a `longjmp` out of it, then the
        // coroutine's end): its word cannot be read, and the call cannot be
        // told from a suspended one. It is kept.
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
    /// A hold outlives the record of its call: a call that returns forgets
    /// the calls recorded deeper than it, and on one thread with several
    /// stacks a call it forgets may be suspended rather than gone (green
    /// threads: a callback on one coroutine stack returns while one that
    /// started after it on another is suspended). So the holder is judged
    /// by its own mark alone, and only where its word can be read whatever
    /// happened since: on the thread's own stack, which stays mapped (a
    /// coroutine's stack may have been freed with the coroutine). There it
    /// is gone when it lies below `current` on that stack (a running
    /// call's frame is above every frame the thread has since left), or
    /// when its token was overwritten. A holder elsewhere, or anywhere
    /// where the thread's stack bounds are unknown (off Linux), is kept:
    /// its value is "already in use" until its `LocalRef` drops or the
    /// thread exits.
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
/// gone while they were still recorded as running: calls abandoned by a
/// `longjmp` or an exception inside their body, which never returned. A
/// nested token is unique in the process (see [`nested_token_block`]), so
/// a token found here names one call, which ended nothing it held: a
/// `Closure::new` turn it took is still its own (see
/// `closure::turn_holder_is_gone`).
///
/// Two of them (a node has no room for more: see `context`), the older
/// one forgotten first: the call that took a turn is usually the last one
/// a jump abandoned, or the one before.
///
/// Written and read by the context's owner only, and by signal handlers'
/// calls on it: a claim is one compare-and-swap, so that two calls of the
/// thread cannot both claim one token.
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
/// (for the main thread glibc reads `/proc/self/maps`, musl probes the
/// mapping) and kept until the
/// context serves another thread.
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
