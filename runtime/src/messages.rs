//! Every last-error message of this copy of the runtime, in one list, so
//! unloading the library can free those of threads that outlive it. A
//! message is owned by its thread's slot; the list only lets the unload
//! find it. A doubly-linked list under a spin lock, touched only on the
//! error path; the fork handlers ([`hooks`](crate::hooks)) hold the lock
//! across `fork`.

use core::cell::UnsafeCell;
use core::ptr;

use crate::sync::{AtomicBool, Ordering};

pub(crate) struct Message {
    text: String,
    prev: *mut Message,
    next: *mut Message,
}

impl Message {
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

struct List {
    locked: AtomicBool,
    /// The first message, or null; only under `locked`.
    head: UnsafeCell<*mut Message>,
}

// SAFETY: `head` and the links are accessed only under the spin lock;
// the texts are owned by the messages' threads.
unsafe impl Sync for List {}

static LIST: List = List {
    locked: AtomicBool::new(false),
    head: UnsafeCell::new(ptr::null_mut()),
};

pub(crate) fn lock() {
    // Acquire: pairs with the Release in `unlock`.
    while LIST
        .locked
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
}

/// Releases the lock `lock` took (in a `fork` child, the parent's).
pub(crate) fn unlock() {
    // Release: pairs with the Acquire in `lock`.
    LIST.locked.store(false, Ordering::Release);
}

/// Allocates a linked message holding `text`; the caller owns it and
/// frees it with [`free`].
pub(crate) fn insert(text: String) -> *mut Message {
    let message = Box::into_raw(Box::new(Message {
        text,
        prev: ptr::null_mut(),
        next: ptr::null_mut(),
    }));
    lock();
    // SAFETY: under the lock; `message` is fresh, the old head (if any)
    // live and linked.
    unsafe {
        let head = *LIST.head.get();
        (*message).next = head;
        if !head.is_null() {
            (*head).prev = message;
        }
        *LIST.head.get() = message;
    }
    unlock();
    message
}

/// Unlinks and frees `message`.
///
/// # Safety
///
/// `message` came from `insert`, was not freed since, and the caller owns
/// it and gives it up.
pub(crate) unsafe fn free(message: *mut Message) {
    lock();
    // SAFETY: under the lock; `message` and its neighbours are live and
    // linked (caller obligation).
    unsafe {
        let (prev, next) = ((*message).prev, (*message).next);
        if prev.is_null() {
            *LIST.head.get() = next;
        } else {
            (*prev).next = next;
        }
        if !next.is_null() {
            (*next).prev = prev;
        }
    }
    unlock();
    // SAFETY: unlinked above; the caller gives it up.
    drop(unsafe { Box::from_raw(message) });
}

/// Frees every message: the library is being unloaded.
///
/// # Safety
///
/// No thread runs the library's code, now or until it is unloaded: the
/// slots' pointers are never used again.
// Only the ELF unload hook (Linux, Android) frees the messages.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub(crate) unsafe fn free_all() {
    lock();
    // SAFETY: under the lock; every linked message is live and unused
    // (caller obligation).
    let mut message = unsafe { LIST.head.get().replace(ptr::null_mut()) };
    unlock();
    while !message.is_null() {
        // SAFETY: live, unused, and the whole chain was taken above.
        let boxed = unsafe { Box::from_raw(message) };
        message = boxed.next;
    }
}
