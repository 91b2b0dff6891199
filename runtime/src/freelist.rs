//! A lock-free, ABA-safe, fork-safe pool of never-freed nodes.
//!
//! Nodes live in a segmented array of slots (bucket `b` holds `2^b`), so
//! every node has a stable 32-bit index and is never freed while the list
//! lives. The free list is a Treiber stack whose head packs
//! `(tag << 32) | (index + 1)` into one `AtomicU64`; every push or pop
//! bumps the tag, so a pop that was overtaken (pop A, pop B, push A) fails
//! its compare-exchange: no ABA. No lock, so a `fork` leaves the child at
//! worst one node neither free nor in use.
//!
//! # Atomic orderings
//!
//! * `push`'s `Release` compare-exchange on `head` pairs with `pop`'s
//!   `Acquire`: the node's contents and link pass to the next owner.
//! * A bucket is published with a `Release` compare-exchange and a node
//!   pointer with a `Release` store, both read with `Acquire`, so their
//!   contents are visible to any reader.
//! * `next` is read only between an `Acquire` load of `head` and the CAS
//!   that validates it: `Relaxed`, a stale value fails the CAS.
//! * `allocated` only hands out unique indices: `Relaxed`.

use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, Ordering, OwnLines};

const BUCKETS: usize = 32;
const EMPTY: u32 = 0;

/// A pooled value's stable index in its list and its free-list link, kept
/// by the value (see [`Pooled`]).
pub(crate) struct Link {
    /// Set by [`FreeList::alloc`] before the node is published.
    index: u32,
    /// `index + 1` of the next free node, or `EMPTY`.
    next: AtomicU32,
}

impl Link {
    /// The link of a value not in a list yet.
    pub(crate) fn new() -> Link {
        Link {
            index: 0,
            next: AtomicU32::new(EMPTY),
        }
    }
}

/// A value a [`FreeList`] pools, which holds its [`Link`] (to share a line
/// with what a new owner writes anyway).
///
/// # Safety
///
/// `link` and `link_mut` return the same field of `self` every time, which
/// only the list reaches: a link changed under it could hand one node to
/// two owners.
pub(crate) unsafe trait Pooled {
    fn link(&self) -> &Link;
    fn link_mut(&mut self) -> &mut Link;
}

/// One pooled value, aligned so that two nodes (written by two threads)
/// never share a line pair (as [`OwnLines`]).
#[repr(C, align(128))]
pub(crate) struct Node<T> {
    pub(crate) value: T,
}

impl<T: Pooled> Node<T> {
    #[cfg_attr(callgate_loom, allow(dead_code))]
    pub(crate) fn index(&self) -> u32 {
        self.value.link().index
    }

    fn next(&self) -> &AtomicU32 {
        &self.value.link().next
    }
}

pub(crate) struct FreeList<T> {
    buckets: [AtomicPtr<AtomicPtr<Node<T>>>; BUCKETS],
    allocated: AtomicU32,
    /// Every bind and release writes it: lines of its own.
    head: OwnLines<AtomicU64>,
}

fn bucket_of(index: u32) -> (usize, usize) {
    let position = index as u64 + 1;
    let bucket = 63 - position.leading_zeros() as usize;
    (bucket, (position - (1 << bucket)) as usize)
}

impl<T: Pooled> FreeList<T> {
    #[cfg(not(callgate_loom))]
    pub(crate) const fn new() -> Self {
        FreeList {
            buckets: [const { AtomicPtr::new(core::ptr::null_mut()) }; BUCKETS],
            allocated: AtomicU32::new(0),
            head: OwnLines(AtomicU64::new(0)),
        }
    }

    #[cfg(callgate_loom)]
    pub(crate) fn new() -> Self {
        FreeList {
            buckets: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
            allocated: AtomicU32::new(0),
            head: OwnLines(AtomicU64::new(0)),
        }
    }

    /// Takes a free node, if there is one.
    pub(crate) fn pop(&self) -> Option<&Node<T>> {
        // Acquire: pairs with the Release CAS in `push`.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            let index = head as u32;
            if index == EMPTY {
                return None;
            }
            let node = self.get(index - 1)?;
            // Relaxed: validated by the CAS below (module docs).
            let next = node.next().load(Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(next);
            // Acquire on success: pairs with the Release CAS in `push`.
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Acquire, Ordering::Acquire)
            {
                Ok(_) => {
                    crate::valgrind::happens_after(node);
                    return Some(node);
                }
                Err(current) => {
                    crate::hint::rarely_taken();
                    head = current;
                }
            }
        }
    }

    /// Returns `node` to the free list.
    ///
    /// # Safety
    ///
    /// The caller owns `node` (from `pop` or `alloc` of this list, not pushed
    /// since: a node pushed twice could get two owners) and gives it up.
    pub(crate) unsafe fn push(&self, node: &Node<T>) {
        crate::valgrind::happens_before(node);
        // Relaxed: the CAS below re-validates the value.
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // Relaxed: published by the Release CAS below.
            node.next().store(head as u32, Ordering::Relaxed);
            let new = ((head >> 32).wrapping_add(1) << 32) | u64::from(node.index() + 1);
            // Release: pairs with the Acquire load/CAS in `pop`.
            match self
                .head
                .compare_exchange_weak(head, new, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(current) => head = current,
            }
        }
    }

    /// Allocates a new node holding `value`, owned by the caller; aborts past
    /// 2^32 - 1 nodes.
    pub(crate) fn alloc(&self, value: T) -> &Node<T> {
        // Relaxed: only uniqueness of the index matters.
        let index = self.allocated.fetch_add(1, Ordering::Relaxed);
        if index == u32::MAX {
            crate::diag::abort_with("callgate: more than 4294967294 thread contexts; aborting");
        }
        let (bucket, offset) = bucket_of(index);
        let slots = self.bucket(bucket);
        let mut node = Box::new(Node { value });
        node.value.link_mut().index = index;
        let node = Box::into_raw(node);
        // SAFETY: `bucket` holds `1 << bucket` slots, `offset < 1 << bucket`
        // (`bucket_of`), and lives as long as `self`.
        let slot = unsafe { &*slots.add(offset) };
        // Release: pairs with the Acquire in `get` (module docs).
        slot.store(node, Ordering::Release);
        // SAFETY: from `Box::into_raw`, freed only with the list.
        unsafe { &*node }
    }

    /// The bucket `bucket`, allocating it on first use.
    fn bucket(&self, bucket: usize) -> *const AtomicPtr<Node<T>> {
        // Acquire: pairs with the Release CAS below.
        let current = self.buckets[bucket].load(Ordering::Acquire);
        if !current.is_null() {
            return current;
        }
        let fresh: Box<[AtomicPtr<Node<T>>]> = (0..1usize << bucket)
            .map(|_| AtomicPtr::new(core::ptr::null_mut()))
            .collect();
        let fresh = Box::into_raw(fresh) as *mut AtomicPtr<Node<T>>;
        // Release on success: publishes the zeroed slots; Acquire on failure:
        // pairs with the winner's Release.
        match self.buckets[bucket].compare_exchange(
            core::ptr::null_mut(),
            fresh,
            Ordering::Release,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(winner) => {
                // SAFETY: from `Box::into_raw` of a slice of this length, unshared.
                drop(unsafe {
                    Box::from_raw(core::ptr::slice_from_raw_parts_mut(fresh, 1usize << bucket))
                });
                winner
            }
        }
    }

    /// The node at `index`, or `None` if its slot is not filled yet.
    fn get(&self, index: u32) -> Option<&Node<T>> {
        let (bucket, offset) = bucket_of(index);
        // Acquire: pairs with the Release CAS in `bucket`.
        let slots = self.buckets[bucket].load(Ordering::Acquire);
        if slots.is_null() {
            return None;
        }
        // SAFETY: a published bucket has `1 << bucket` slots, more than
        // `offset`, and lives as long as `self`.
        let slot = unsafe { &*slots.add(offset) };
        // Acquire: pairs with the Release store in `alloc`.
        let node = slot.load(Ordering::Acquire);
        // SAFETY: a non-null slot's node lives as long as `self`.
        (!node.is_null()).then(|| unsafe { &*node })
    }

    /// Every node allocated so far, free or in use.
    #[cfg_attr(callgate_loom, allow(dead_code))]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Node<T>> {
        // Relaxed: a snapshot; nodes still being filled are skipped by `get`.
        let allocated = self.allocated.load(Ordering::Relaxed).min(u32::MAX - 1);
        (0..allocated).filter_map(move |index| self.get(index))
    }

    pub(crate) fn allocated(&self) -> usize {
        // Relaxed: a statistic.
        self.allocated.load(Ordering::Relaxed) as usize
    }

    /// The indices of the free nodes, exact only while nobody pushes or pops
    /// (a `fork` child, tests, models).
    #[cfg(any(unix, test, callgate_loom))]
    #[cfg_attr(callgate_loom, allow(dead_code))]
    pub(crate) fn free_indices(&self) -> Vec<u32> {
        // Acquire: pairs with the Release CAS in `push`.
        let mut link = self.head.load(Ordering::Acquire) as u32;
        let mut indices = Vec::new();
        // Bounded, so a list changed under the walk cannot loop forever.
        while link != EMPTY && indices.len() <= self.allocated() {
            indices.push(link - 1);
            // Relaxed: a quiescent list (see above).
            link = self
                .get(link - 1)
                .map_or(EMPTY, |node| node.next().load(Ordering::Relaxed));
        }
        indices
    }

    /// How many nodes are free: a walk, so `push` and `pop` keep no count.
    #[cfg(test)]
    pub(crate) fn free(&self) -> usize {
        self.free_indices().len()
    }
}

impl<T> FreeList<T> {
    /// Frees every node and bucket, leaving the list as `new` made it.
    ///
    /// # Safety
    ///
    /// As for dropping it: nobody uses the list or its nodes, now or after.
    #[cfg_attr(callgate_loom, allow(dead_code))]
    // Only the ELF unload hook (Linux, Android) frees the pool.
    #[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
    pub(crate) unsafe fn free_all(&self) {
        // Relaxed: the caller guarantees nobody else uses the list.
        self.head.store(0, Ordering::Relaxed);
        self.allocated.store(0, Ordering::Relaxed);
        for (bucket, slots) in self.buckets.iter().enumerate() {
            let slots = slots.swap(core::ptr::null_mut(), Ordering::Relaxed);
            // SAFETY: taken out of the list; nobody else uses it (caller
            // obligation).
            unsafe { free_bucket(slots, bucket) };
        }
    }
}

/// Frees bucket number `bucket` (if not null) and its nodes.
///
/// # Safety
///
/// `slots` is null or a bucket from `FreeList::bucket` that no list refers
/// to and nobody uses.
unsafe fn free_bucket<T>(slots: *mut AtomicPtr<Node<T>>, bucket: usize) {
    if slots.is_null() {
        return;
    }
    // SAFETY: from `Box::into_raw` of `1 << bucket` slots, ours now.
    let slots =
        unsafe { Box::from_raw(core::ptr::slice_from_raw_parts_mut(slots, 1usize << bucket)) };
    for slot in slots.iter() {
        // Relaxed: nobody else uses the bucket (caller obligation).
        let node = slot.load(Ordering::Relaxed);
        if !node.is_null() {
            // SAFETY: a node from `Box::into_raw` in `alloc`, freed only here.
            drop(unsafe { Box::from_raw(node) });
        }
    }
}

impl<T> Drop for FreeList<T> {
    fn drop(&mut self) {
        for (bucket, slots) in self.buckets.iter_mut().enumerate() {
            // Relaxed: `&mut self` means nobody else uses the list.
            let slots = slots.load(Ordering::Relaxed);
            // SAFETY: `&mut self`: nobody else uses the list or its buckets.
            unsafe { free_bucket(slots, bucket) };
        }
    }
}

// SAFETY: the list hands `&Node<T>` to other threads and moves values
// between them, hence `T: Send + Sync`; its own fields are atomics.
unsafe impl<T: Send + Sync> Sync for FreeList<T> {}
// SAFETY: as above; dropping the list drops the `T`s on the dropping thread.
unsafe impl<T: Send + Sync> Send for FreeList<T> {}

/// A value with a link of its own, for the tests and models of the list.
#[cfg(any(test, callgate_loom))]
pub(crate) struct Item<T> {
    link: Link,
    value: T,
}

#[cfg(any(test, callgate_loom))]
impl<T> Item<T> {
    pub(crate) fn new(value: T) -> Item<T> {
        Item {
            link: Link::new(),
            value,
        }
    }
}

#[cfg(any(test, callgate_loom))]
impl<T> core::ops::Deref for Item<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

// SAFETY: both return the `link` field, private to this module.
#[cfg(any(test, callgate_loom))]
unsafe impl<T> Pooled for Item<T> {
    fn link(&self) -> &Link {
        &self.link
    }

    fn link_mut(&mut self) -> &mut Link {
        &mut self.link
    }
}

#[cfg(all(test, not(callgate_loom)))]
mod tests;
