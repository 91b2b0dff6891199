use super::*;
use crate::tls::imp::set;

/// In a test executable the linker relaxes the descriptor sequence to
/// local-exec, so the probe finds a static offset, and reading at it
/// gives what the descriptor path gives.
#[test]
fn the_static_offset_reads_the_slot() {
    let offset = static_offset().expect("an executable's TLS is static");
    assert!(offset < 0, "x86-64 TLS lies below the thread pointer");
    let marker = core::ptr::without_provenance::<ContextNode>(0x1000);
    set(marker);
    open_fast_gate();
    assert_eq!(get_static(), Some(marker));
    std::thread::spawn(move || {
        // Same offset, this thread's own slot.
        assert_eq!(get_static(), Some(core::ptr::null()));
    })
    .join()
    .unwrap();
    close_fast_gate();
    assert_eq!(get_static(), None);
    set(core::ptr::null());
}

/// The fast path's word sits at `QUIET_OFFSET` of a 128-byte line pair
/// that holds no other data: neither this module's other word nor the
/// free list's head, which threads write, sits in it.
#[test]
fn the_static_offset_word_has_its_line_pair_to_itself() {
    let word = core::ptr::from_ref(static_word()).addr();
    assert_eq!(word % 128, QUIET_OFFSET);
    let pair = word - QUIET_OFFSET;
    let apart = |other: usize, size: usize| other + size <= pair || other >= pair + 128;
    assert!(apart(core::ptr::from_ref(&gate::PROBED).addr(), 8));
    let contexts = core::ptr::from_ref(&crate::context::CONTEXTS);
    assert!(apart(
        contexts.addr(),
        core::mem::size_of_val(&crate::context::CONTEXTS)
    ));
}

#[test]
fn only_the_return_argument_resolver_is_recognised() {
    let plain: [u8; 5] = [0x48, 0x8b, 0x40, 0x08, 0xc3];
    let cet: [u8; 9] = [0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x40, 0x08, 0xc3];
    let other: [u8; 5] = [0x48, 0x8b, 0x40, 0x10, 0xc3];
    // SAFETY: each array is readable for its whole length, and the
    // check stops at the first byte that differs.
    unsafe {
        assert!(returns_argument(plain.as_ptr().expose_provenance()));
        assert!(returns_argument(cet.as_ptr().expose_provenance()));
        assert!(!returns_argument(other.as_ptr().expose_provenance()));
    }
}
