// `#[user_data]` in every form and position, and reached through the C
// parameters with `from = …`; closures of every kind, a table of `local`
// callbacks.
use callgate::{Closure, OnceClosure, UserData, c_callback};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Shared {
    pub calls: AtomicU64,
}

pub struct Exclusive {
    pub calls: u64,
}

#[c_callback(local, on_panic = 0)]
pub fn compare(a: &c_int, b: &c_int, #[user_data] shared: &Shared) -> c_int {
    shared.calls.fetch_add(1, Ordering::Relaxed);
    a.cmp(b) as c_int
}

#[c_callback(local)]
pub fn first(#[user_data] state: &mut Exclusive, value: u64) {
    state.calls += value;
}

#[c_callback(on_error = -1)]
pub fn optional(#[user_data] state: Option<&Shared>) -> i64 {
    state.map_or(0, |state| state.calls.load(Ordering::Relaxed) as i64)
}

#[c_callback(local)]
pub fn optional_mut(value: u8, #[user_data] state: Option<&mut Exclusive>) {
    if let Some(state) = state {
        state.calls += u64::from(value);
    }
}

#[repr(C)]
pub struct Context {
    _opaque: [u8; 0],
}

/// Where a C library keeps a context's data: `void *context_data(context *)`.
pub extern "C" fn context_data(context: *mut Context) -> *mut c_void {
    context.cast()
}

#[c_callback(local, on_error = -1)]
pub fn from_accessor(
    context: *mut Context,
    #[user_data(from = context_data(context))] shared: &Shared,
    argc: c_int,
    #[len = argc] argv: &[*mut Context],
) -> i64 {
    shared.calls.load(Ordering::Relaxed) as i64 + argv.len() as i64
}

#[c_callback(local)]
pub fn from_accessor_optional(
    context: *mut Context,
    #[user_data(from = context_data(context).cast::<u8>().cast())] state: Option<&mut Exclusive>,
) {
    if let Some(state) = state {
        state.calls += 1;
    }
}

callgate::export_table! {
    /// The callbacks.
    pub static pass_callbacks: PassCallbacks {
        compare,
        first,
        optional_mut,
    }
}

fn main() {
    let shared = UserData::new(Shared { calls: AtomicU64::new(0) }).into_raw();
    // SAFETY: from `into_raw`, not used again.
    unsafe { UserData::<Shared>::destroy(shared) };

    let mut total = 0_i64;
    let adder = Closure::new(-1, move |value: c_int| -> Result<c_int, String> {
        total += i64::from(value);
        c_int::try_from(total).map_err(|error| error.to_string())
    });
    let _: unsafe extern "C" fn(*mut c_void, c_int) -> c_int = adder.data_first();
    let _: unsafe extern "C" fn(c_int, *mut c_void) -> c_int = adder.data_last();
    let parts = adder.into_raw_parts();
    // SAFETY: C's side: free once.
    unsafe { (parts.free)(parts.data) };

    let parallel = Closure::concurrent((), |a: u8, b: *const c_void, c: f64| {
        let _ = (a, b, c);
    });
    drop(parallel);

    let once = OnceClosure::new(std::ptr::null_mut(), || -> *mut c_void { std::ptr::null_mut() });
    drop(once);

    // The C types a library declares: no `void *`, and `T **` for the array.
    let _: unsafe extern "C" fn(*mut Context, c_int, *mut *mut Context) -> i64 = from_accessor;
    let _: unsafe extern "C" fn(*mut Context) = from_accessor_optional;

    let table: &PassCallbacks = &pass_callbacks;
    let _ = table.compare;
}
