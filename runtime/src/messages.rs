//! Every last-error message the threads of this copy of the runtime hold,
//! in one list, so unloading the library can free the messages of threads
//! that outlive it.
//!
//! A message is owned by its thread's last-error slot; the list only lets
//! the unload find it. A doubly-linked list under a spin lock, touched only
//! on the error path and at unload. The fork handlers of
//! [`hooks`](crate::hooks) hold the lock across `fork`, so a child never
//! inherits it held.

use core::cell::UnsafeCell;
use core::ptr;

use crate::sync::{AtomicBool, Ordering};

/// A message and its links in the list.
pub(crate) struct Message {
    text: String,
    prev: *mut Message,
    next: *mut Message,
}

impl Message {
    /// The message's text.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

struct List {
    locked: AtomicBool,
    /// The first message, or null; read and written only under `locked`.
    head: UnsafeCell<*mut Message>,
}

// SAFETY: `head` and the links of the messages are accessed only under the
// spin lock; the texts are owned by the threads that hold the messages.
unsafe impl Sync for List {}

static LIST: List = List {
    locked: AtomicBool::new(false),
    head: UnsafeCell::new(ptr::null_mut()),
};

/// Takes the list's lock.
pub(crate) fn lock() {
    // Acquire: pairs with the Release in `unlock`, so the previous holder's
    // changes to the links are visible.
    while LIST
        .locked
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
}

/// Releases the list's lock, taken by `lock` on this thread (or, in a
/// `fork` child, by the forking thread in the parent).
pub(crate) fn unlock() {
    // Release: publishes the changes to the links to the next holder.
    LIST.locked.store(false, Ordering::Release);
}

/// Allocates a message holding `text` and links it into the list; the
/// caller owns it and frees it with [`free`].
pub(crate) fn insert(text: String) -> *mut Message {
    let message = Box::into_raw(Box::new(Message {
        text,
        prev: ptr::null_mut(),
        next: ptr::null_mut(),
    }));
    lock();
    // SAFETY: the lock is held, so `head` and the links are ours; `message`
    // is a fresh box and the old head (if any) a live linked message.
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
/// it (nothing uses it afterwards).
pub(crate) unsafe fn free(message: *mut Message) {
    lock();
    // SAFETY: the lock is held; `message` is a live linked message (caller
    // obligation), and so are its neighbours.
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
    // SAFETY: unlinked above, so the list no longer refers to it; the
    // caller gives it up.
    drop(unsafe { Box::from_raw(message) });
}

/// Frees every message in the list: the library is being unloaded, so no
/// thread will read its message again.
///
/// # Safety
///
/// No thread runs the library's code any more, and none will until it is
/// unloaded: the pointers the threads' slots hold are never used again.
// Only the ELF unload hook (Linux, Android) frees the pool and the
// messages.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
pub(crate) unsafe fn free_all() {
    lock();
    // SAFETY: the lock is held; every linked message is live, and no thread
    // uses its message any more (caller obligation).
    let mut message = unsafe { LIST.head.get().replace(ptr::null_mut()) };
    unlock();
    while !message.is_null() {
        // SAFETY: a live message no thread uses, unlinked from the list
        // above (the whole chain was taken).
        let boxed = unsafe { Box::from_raw(message) };
        message = boxed.next;
    }
}
