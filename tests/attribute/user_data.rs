//! `#[user_data]` parameters, driven from C: glibc's `qsort_r` with a
//! typed comparator state, the `void *` first, in the middle or last,
//! NULL and misaligned pointers (errors naming the argument, `None` for an
//! `Option`), shared state from C threads, and fallback expressions that
//! use the callback's C-level parameters.

use core::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use callgate::{UserData, c_callback};
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

type DataFirst = unsafe extern "C" fn(*mut c_void, i32) -> i32;
type DataMiddle = unsafe extern "C" fn(i32, *mut c_void, i32) -> i32;
type DataLast = unsafe extern "C" fn(i32, *mut c_void) -> i32;

unsafe extern "C" {
    fn cb_call_first(cb: DataFirst, data: *mut c_void, value: i32) -> i32;
    fn cb_call_middle(cb: DataMiddle, a: i32, data: *mut c_void, b: i32) -> i32;
    fn cb_call_last(cb: DataLast, value: i32, data: *mut c_void) -> i32;
    fn cb_threads(cb: DataFirst, data: *mut c_void, threads: c_int, calls: i32) -> i64;
}

fn last_error() -> String {
    callgate::last_error().unwrap_or_default()
}

/// The comparator's state: the order and how many comparisons it made.
struct SortState {
    descending: bool,
    comparisons: u64,
    /// A key the comparator refuses, by panicking.
    poison: Option<i64>,
}

/// glibc's `qsort_r` comparator: `int (*)(const void *, const void *, void *)`.
#[c_callback(local, on_panic = 0)]
fn by_key(a: *const c_void, b: *const c_void, #[user_data] state: &mut SortState) -> c_int {
    // SAFETY: qsort_r passes two elements of the i64 array.
    let (a, b) = unsafe { (*a.cast::<i64>(), *b.cast::<i64>()) };
    state.comparisons += 1;
    if state
        .poison
        .is_some_and(|poison| a == poison || b == poison)
    {
        panic!("cannot order {a} and {b}");
    }
    let order = a.cmp(&b);
    (if state.descending {
        order.reverse()
    } else {
        order
    }) as c_int
}

fn qsort_r(values: &mut [i64], state: &mut SortState) {
    // SAFETY: `values` holds `len` i64s; `by_key` compares two of them with
    // `state`, which outlives the call.
    unsafe {
        libc::qsort_r(
            values.as_mut_ptr().cast(),
            values.len(),
            size_of::<i64>(),
            Some(by_key),
            (&raw mut *state).cast(),
        );
    }
}

#[test]
fn qsort_r_compares_with_typed_state() {
    let mut values: Vec<i64> = (0..200).map(|i| (i * 7919) % 211).collect();
    let mut state = SortState {
        descending: true,
        comparisons: 0,
        poison: None,
    };
    qsort_r(&mut values, &mut state);
    assert!(values.windows(2).all(|pair| pair[0] >= pair[1]));
    assert!(state.comparisons >= 199);

    // A panicking comparator: qsort_r returns normally, every value is
    // still there, the panic is the thread's last error.
    let mut values: Vec<i64> = (0..50).rev().collect();
    let mut state = SortState {
        descending: false,
        comparisons: 0,
        poison: Some(13),
    };
    qsort_r(&mut values, &mut state);
    let mut sorted = values.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..50).collect::<Vec<i64>>());
    assert!(last_error().starts_with("callback `by_key` panicked: cannot order"));
}

struct Scale {
    factor: i32,
}

#[c_callback(local, on_error = -1)]
fn scale_first(#[user_data] scale: &Scale, value: i32) -> i32 {
    value * scale.factor
}

#[c_callback(local, on_error = -1)]
fn scale_middle(a: i32, #[user_data] scale: &Scale, b: i32) -> i32 {
    (a + b) * scale.factor
}

#[c_callback(local, on_error = -1)]
fn scale_last(value: i32, #[user_data] scale: Option<&Scale>) -> i32 {
    scale.map_or(value, |scale| value * scale.factor)
}

#[test]
fn user_data_in_any_position() {
    let scale = UserData::new(Scale { factor: 3 }).into_raw();
    // SAFETY: `scale` points to a live `Scale` for each call.
    unsafe {
        assert_eq!(cb_call_first(scale_first, scale, 5), 15);
        assert_eq!(cb_call_middle(scale_middle, 2, scale, 5), 21);
        assert_eq!(cb_call_last(scale_last, 5, scale), 15);
        // `Option`: NULL is `None`.
        assert_eq!(cb_call_last(scale_last, 5, std::ptr::null_mut()), 5);
        UserData::<Scale>::destroy(scale);
    }
}

#[test]
fn null_or_misaligned_user_data_is_an_error_naming_it() {
    // SAFETY: NULL is checked before anything reads it.
    unsafe {
        assert_eq!(cb_call_first(scale_first, std::ptr::null_mut(), 5), -1);
        assert_eq!(last_error(), "argument `scale` is NULL");
        assert_eq!(cb_call_middle(scale_middle, 1, std::ptr::null_mut(), 2), -1);
        assert_eq!(last_error(), "argument `scale` is NULL");
    }
    let scale = Scale { factor: 2 };
    let misaligned = (&raw const scale).cast::<u8>().wrapping_add(1).cast_mut();
    // SAFETY: a misaligned pointer is refused before it is read.
    let result = unsafe { cb_call_first(scale_first, misaligned.cast(), 5) };
    assert_eq!(result, -1);
    assert_eq!(last_error(), "argument `scale` is not aligned to 4 bytes");
}

/// One counter shared by every C thread's calls: `&T` user data is `Sync`.
struct Counter {
    calls: AtomicU64,
    total: AtomicI64,
}

#[c_callback(local, on_error = -1)]
fn count(#[user_data] counter: &Counter, value: i32) -> i32 {
    counter.calls.fetch_add(1, Ordering::Relaxed);
    counter.total.fetch_add(i64::from(value), Ordering::Relaxed);
    1
}

#[test]
fn shared_user_data_from_c_threads() {
    let counter = Counter {
        calls: AtomicU64::new(0),
        total: AtomicI64::new(0),
    };
    // SAFETY: `counter` outlives the threads, which only read it through `&`.
    let sum = unsafe { cb_threads(count, (&raw const counter).cast_mut().cast(), 8, 1000) };
    assert_eq!(sum, 8000);
    assert_eq!(counter.calls.load(Ordering::Relaxed), 8000);
    assert_eq!(counter.total.load(Ordering::Relaxed), 8 * 999 * 1000 / 2);
}

/// Reports a failure the C way: writes `code` to `*status` when C passed
/// a status pointer. `status` is the C-level parameter: the raw pointer.
fn fail_with(status: *mut i32, code: i32) -> i32 {
    if !status.is_null() {
        // SAFETY: C passed NULL or a valid `int *`.
        unsafe { *status = code };
    }
    code
}

/// The fallback expressions use the C-level parameters: `status` is the
/// `int32_t *` C passed (a `&mut i32` in the body) and `scale` the `void *`.
#[c_callback(local, on_error = fail_with(status, -1), on_panic = fail_with(status, if scale.is_null() { -3 } else { -2 }))]
fn checked_scale(value: i32, status: &mut i32, #[user_data] scale: &Scale) -> Result<i32, String> {
    if value < 0 {
        return Err(format!("{value} is negative"));
    }
    let scaled = value
        .checked_mul(scale.factor)
        .expect("the product fits in 32 bits");
    *status = 0;
    Ok(scaled)
}

#[test]
fn fallbacks_see_the_c_level_parameters() {
    let scale = Scale { factor: 1 << 30 };
    let data = (&raw const scale).cast_mut().cast::<c_void>();
    let mut status = 99;
    // SAFETY: valid pointers, as C passes them.
    unsafe {
        assert_eq!(checked_scale(1, &mut status, data), 1 << 30);
        assert_eq!(status, 0);
        assert_eq!(checked_scale(-1, &mut status, data), -1);
        assert_eq!((status, last_error().as_str()), (-1, "-1 is negative"));
        assert_eq!(checked_scale(4, &mut status, data), -2);
        assert_eq!(status, -2);
        assert!(last_error().ends_with("panicked: the product fits in 32 bits"));
        // A NULL `status`: the body never runs, the fallback must not write.
        assert_eq!(checked_scale(1, std::ptr::null_mut(), data), -1);
        assert_eq!(last_error(), "argument `status` is NULL");
    }
}
