use super::*;
use crate::context::ContextNode;
use crate::tls::imp::{get_at, set};

/// In a test executable the linker relaxes the descriptor sequence, so
/// the probe finds a static offset, and reading at it gives what the
/// descriptor path gives.
#[test]
fn the_static_offset_reads_the_slot() {
    let offset = static_offset().expect("an executable's TLS is static");
    assert!(offset > 0, "aarch64 TLS lies above the thread pointer");
    let marker = core::ptr::without_provenance::<ContextNode>(0x1000);
    set(marker);
    open_fast_gate();
    let read = || static_at().map(|at| get_at(&at));
    assert_eq!(read(), Some(marker));
    std::thread::spawn(move || {
        // Same offset, this thread's own slot.
        assert_eq!(read(), Some(core::ptr::null()));
    })
    .join()
    .unwrap();
    close_fast_gate();
    assert_eq!(read(), None);
    set(core::ptr::null());
}

/// Each word has a 128-byte line pair to itself.
#[test]
fn the_words_have_their_line_pairs_to_themselves() {
    let word = core::ptr::from_ref(static_word()).addr();
    assert_eq!(word % 128, 0);
    assert_eq!(core::ptr::from_ref(descriptor_word()).addr(), word + 128);
    let probed = core::ptr::from_ref(&gate::PROBED).addr();
    assert!(probed + 8 <= word || probed >= word + 256);
}

#[test]
fn only_the_return_argument_resolver_is_recognised() {
    let plain: [u32; 2] = [0xf940_0400, 0xd65f_03c0];
    let bti: [u32; 3] = [0xd503_245f, 0xf940_0400, 0xd65f_03c0];
    let other: [u32; 2] = [0xf940_0800, 0xd65f_03c0];
    // SAFETY: each array is readable for its whole length, and the
    // check stops at the first instruction that differs.
    unsafe {
        assert!(returns_argument(plain.as_ptr().expose_provenance()));
        assert!(returns_argument(bti.as_ptr().expose_provenance()));
        assert!(!returns_argument(other.as_ptr().expose_provenance()));
    }
}
