use super::*;

/// The head, written by every push and pop, has a line pair to itself.
#[test]
fn the_head_has_its_line_pair_to_itself() {
    let list: FreeList<Item<u8>> = FreeList::new();
    let head = core::ptr::from_ref(&list.head).addr();
    assert_eq!(head % 128, 0);
    assert_eq!(core::mem::size_of_val(&list.head), 128);
    let apart = |other: usize, size: usize| other + size <= head || other >= head + 128;
    assert!(apart(
        core::ptr::from_ref(&list.buckets).addr(),
        core::mem::size_of_val(&list.buckets)
    ));
    assert!(apart(core::ptr::from_ref(&list.allocated).addr(), 4));
}

#[test]
fn bucket_layout_is_dense() {
    assert_eq!(bucket_of(0), (0, 0));
    assert_eq!(bucket_of(1), (1, 0));
    assert_eq!(bucket_of(2), (1, 1));
    assert_eq!(bucket_of(3), (2, 0));
    assert_eq!(bucket_of(6), (2, 3));
    assert_eq!(bucket_of(u32::MAX - 1), (31, (1 << 31) - 1));
}

#[test]
fn pop_returns_pushed_nodes_lifo() {
    let list = FreeList::new();
    assert!(list.pop().is_none());
    let a = list.alloc(Item::new(1));
    let b = list.alloc(Item::new(2));
    // SAFETY: both nodes were just allocated and are pushed once.
    unsafe {
        list.push(a);
        list.push(b);
    }
    assert_eq!(list.free(), 2);
    assert_eq!(list.pop().map(|n| *n.value), Some(2));
    assert_eq!(list.pop().map(|n| *n.value), Some(1));
    assert!(list.pop().is_none());
    assert_eq!(list.allocated(), 2);
    assert_eq!(list.iter().map(|n| *n.value).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn free_all_drops_every_value_and_leaves_the_list_new() {
    use std::rc::Rc;
    let alive = Rc::new(());
    let list = FreeList::new();
    for i in 0..10 {
        let node = list.alloc(Item::new(Rc::clone(&alive)));
        if i % 2 == 0 {
            // SAFETY: just allocated, pushed once, not used afterwards.
            unsafe { list.push(node) };
        }
    }
    assert_eq!(Rc::strong_count(&alive), 11);
    // SAFETY: nothing else uses the list, and no node is used again.
    unsafe { list.free_all() };
    assert_eq!(Rc::strong_count(&alive), 1);
    assert_eq!(list.allocated(), 0);
    assert!(list.pop().is_none());
    let node = list.alloc(Item::new(Rc::clone(&alive)));
    assert_eq!(node.index(), 0);
}

#[test]
fn concurrent_pop_push_never_hands_a_node_out_twice() {
    use std::sync::atomic::AtomicBool;
    let list: FreeList<Item<AtomicBool>> = FreeList::new();
    for _ in 0..4 {
        let node = list.alloc(Item::new(AtomicBool::new(false)));
        // SAFETY: just allocated, pushed once, not used afterwards.
        unsafe { list.push(node) };
    }
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                // Fewer under Miri, which interprets every access.
                for _ in 0..if cfg!(miri) { 500 } else { 20_000 } {
                    let node = list
                        .pop()
                        .unwrap_or_else(|| list.alloc(Item::new(AtomicBool::new(false))));
                    assert!(
                        !node.value.swap(true, Ordering::Relaxed),
                        "node handed out twice"
                    );
                    node.value.store(false, Ordering::Relaxed);
                    // SAFETY: popped or allocated above by this thread,
                    // pushed once, not used afterwards.
                    unsafe { list.push(node) };
                }
            });
        }
    });
    assert!(list.allocated() <= 8);
    assert_eq!(list.free(), list.allocated());
}
