use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};

static DROPS: AtomicUsize = AtomicUsize::new(0);

struct Counted(u32);

impl Drop for Counted {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn into_raw_then_destroy_drops_once() {
    let before = DROPS.load(Ordering::Relaxed);
    let raw = UserData::new(Counted(7)).into_raw();
    // SAFETY: `raw` came from `into_raw` and is live.
    let counted = unsafe { UserData::<Counted>::ref_from_raw(raw) };
    assert_eq!(counted.map(|c| c.0), Some(7));
    // SAFETY: as above; nothing else uses it.
    if let Some(counted) = unsafe { UserData::<Counted>::mut_from_raw(raw) } {
        counted.0 = 8;
    }
    // SAFETY: from `into_raw`, used no more.
    unsafe { UserData::<Counted>::destroy(raw) };
    assert_eq!(DROPS.load(Ordering::Relaxed) - before, 1);
    // SAFETY: NULL is a no-op.
    unsafe { UserData::<Counted>::destroy(core::ptr::null_mut()) };
    // SAFETY: NULL gives `None`.
    assert!(unsafe { UserData::<Counted>::ref_from_raw(core::ptr::null()) }.is_none());
}

#[test]
fn from_raw_takes_ownership_back() {
    let raw = UserData::new(vec![1, 2, 3]).into_raw();
    // SAFETY: from `into_raw`, used no more.
    let back = unsafe { UserData::<Vec<i32>>::from_raw(raw) };
    assert_eq!(back.len(), 3);
    assert_eq!(back.into_inner(), [1, 2, 3]);
}

#[test]
fn a_panicking_drop_stays_in_destroy() {
    struct Explodes;
    impl Drop for Explodes {
        fn drop(&mut self) {
            panic!("boom");
        }
    }
    let raw = UserData::new(Explodes).into_raw();
    // SAFETY: from `into_raw`, used no more.
    unsafe { UserData::<Explodes>::destroy(raw) };
}

#[test]
fn user_data_arguments_name_a_null_argument() {
    let mut value = 5_u64;
    let p = (&raw mut value).cast::<c_void>();
    // SAFETY: `p` points to a live u64 that nothing else touches.
    unsafe {
        assert_eq!(*user_data_ref::<u64>(p, "state").unwrap(), 5);
        *user_data_mut::<u64>(p, "state").unwrap() = 6;
        assert!(
            opt_user_data_ref::<u64>(core::ptr::null_mut(), "state")
                .unwrap()
                .is_none()
        );
        assert!(opt_user_data_mut::<u64>(p, "state").unwrap().is_some());
        let error = user_data_ref::<u64>(core::ptr::null_mut(), "state").unwrap_err();
        assert_eq!(error.message(), "argument `state` is NULL");
    }
    assert_eq!(value, 6);
}
