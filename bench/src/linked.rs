//! The benchmark callbacks linked into this binary: the same bodies as the
//! `cdylib` fixture's (`fixture/`), with callgate's runtime in the
//! executable, where thread-locals are static TLS.

use callgate::{Closure, OnceClosure, c_callback};
use std::ffi::{CStr, c_char, c_void};
use std::sync::{Mutex, PoisonError};

use crate::Callbacks;
use crate::harness::WithData;

/// The callbacks of this module. Each call makes two new [`Closure`]s that
/// are never freed.
pub fn callbacks() -> Callbacks {
    let step = 1;
    let closure =
        Closure::<fn(i32) -> i32>::new(-1, move |x: i32| x.wrapping_add(step)).into_raw_parts();
    let concurrent = Closure::<fn(i32) -> i32>::concurrent(-1, move |x: i32| x.wrapping_add(step))
        .into_raw_parts();
    Callbacks {
        raw,
        raw_cstr,
        bound,
        per_call,
        local,
        cstr,
        raw_sum,
        sum,
        // SAFETY: nothing frees the closure, so its function may be called
        // with its data from any thread for the rest of the process.
        closure: unsafe { WithData::new(closure.data_first, closure.data) },
        // SAFETY: as for `closure`.
        closure_concurrent: unsafe { WithData::new(concurrent.data_first, concurrent.data) },
        // SAFETY: `once_cycle` makes, calls and frees a closure of its own
        // on every call and ignores its data.
        once_cycle: unsafe { WithData::new(once_cycle, core::ptr::null_mut()) },
        // SAFETY: as for `once_cycle`.
        closure_cycle: unsafe { WithData::new(closure_cycle, core::ptr::null_mut()) },
        // SAFETY: `mutex` ignores its data and locks a static of its own.
        mutex: unsafe { WithData::new(mutex, core::ptr::null_mut()) },
        // SAFETY: `STEP` is a never-written static, the `Step` that
        // `user_data` expects.
        user_data: unsafe { WithData::new(user_data, (&raw const STEP).cast_mut().cast()) },
    }
}

/// Per-thread state for [`local`]: a counter of the calls it served.
#[derive(Default)]
struct Scratch {
    calls: u64,
}

impl callgate::Local for Scratch {}

/// The floor: a plain C-ABI function, no callgate.
extern "C" fn raw(x: i32) -> i32 {
    x.wrapping_add(1)
}

/// The floor for [`cstr`]: the same `&CStr` conversion, no boundary.
///
/// # Safety
///
/// `text` points to a NUL-terminated string.
unsafe extern "C" fn raw_cstr(text: *const c_char, x: i32) -> i32 {
    // SAFETY: `text` is a NUL-terminated string (caller obligation).
    let text = unsafe { CStr::from_ptr(text) };
    cstr_work(text, x)
}

/// A bound callback: the fast path.
#[c_callback(local, on_panic = -1)]
fn bound(x: i32) -> i32 {
    x.wrapping_add(1)
}

/// A callback that attaches and releases its thread on every call.
#[c_callback(local, attach = per_call, on_panic = -1)]
fn per_call(x: i32) -> i32 {
    x.wrapping_add(1)
}

/// A bound callback with one `#[local]` parameter.
#[c_callback(local, on_panic = -1)]
fn local(#[local] scratch: &mut Scratch, x: i32) -> i32 {
    scratch.calls = scratch.calls.wrapping_add(1);
    x.wrapping_add(1)
}

/// A bound callback with one `&CStr` parameter (NULL-checked).
#[c_callback(local, on_panic = -1)]
fn cstr(text: &CStr, x: i32) -> i32 {
    cstr_work(text, x)
}

/// Makes a [`OnceClosure`] returning `x + 1` and calls it once through
/// its C function, which frees it; `data` is unused.
extern "C" fn once_cycle(_data: *mut c_void, x: i32) -> i32 {
    let step = 1;
    let parts =
        OnceClosure::<fn(i32) -> i32>::new(-1, move |x: i32| x.wrapping_add(step)).into_raw_parts();
    // An opaque pointer, as C's is: the call is not inlined.
    let function = core::hint::black_box(parts.data_first);
    // SAFETY: the function and data of one once closure, called once.
    unsafe { function(parts.data, x) }
}

/// Makes a [`Closure::new`] closure returning `x + 1`, hands it to C,
/// calls it once through its C function and frees it; `data` is unused.
extern "C" fn closure_cycle(_data: *mut c_void, x: i32) -> i32 {
    let step = 1;
    let parts =
        Closure::<fn(i32) -> i32>::new(-1, move |x: i32| x.wrapping_add(step)).into_raw_parts();
    // Opaque pointers, as C's are: the calls are not inlined.
    let (function, free) = core::hint::black_box((parts.data_first, parts.free));
    // SAFETY: the function, data and `free` of one closure handed to C;
    // `free` once, after the last call.
    unsafe {
        let result = function(parts.data, x);
        free(parts.data);
        result
    }
}

/// The floor for calls that take turns: locks one process-wide [`Mutex`],
/// adds `x` to the total it guards and returns `x + 1`; `data` is unused.
extern "C" fn mutex(_data: *mut c_void, x: i32) -> i32 {
    static TOTAL: Mutex<i32> = Mutex::new(0);
    // Nothing panics while holding the lock, so it is never poisoned.
    let mut total = TOTAL.lock().unwrap_or_else(PoisonError::into_inner);
    *total = total.wrapping_add(x);
    x.wrapping_add(1)
}

/// What [`user_data`] adds: the state C passes back to it.
struct Step {
    by: i32,
}

/// The state [`user_data`] gets.
static STEP: Step = Step { by: 1 };

/// A bound callback with a `#[user_data]` parameter.
#[c_callback(local, on_panic = -1)]
fn user_data(#[user_data] step: &Step, x: i32) -> i32 {
    x.wrapping_add(step.by)
}

/// The floor for [`sum`]: the same sum of `(data, data_len)`, no boundary.
///
/// # Safety
///
/// `data` points to `data_len` readable bytes.
unsafe extern "C" fn raw_sum(data: *const u8, data_len: usize) -> u32 {
    // SAFETY: `data` points to `data_len` readable bytes (caller
    // obligation).
    let data = unsafe { core::slice::from_raw_parts(data, data_len) };
    sum_work(data)
}

/// A bound callback with one slice parameter.
#[c_callback(local, on_error = u32::MAX)]
fn sum(data: &[u8]) -> u32 {
    sum_work(data)
}

/// The sum of the bytes.
#[inline(always)]
fn sum_work(data: &[u8]) -> u32 {
    data.iter().map(|&byte| u32::from(byte)).sum()
}

/// `x + 1`, plus a read of the string so the conversion is not optimised away.
#[inline(always)]
fn cstr_work(text: &CStr, x: i32) -> i32 {
    x.wrapping_add(text.count_bytes() as i32).wrapping_add(1)
}
