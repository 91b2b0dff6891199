// The expansion snapshot's input for user data: a `local` comparator with
// a `#[user_data]` parameter, as glibc's `qsort_r` calls it, and an SQLite
// function whose user data comes from `sqlite3_user_data(ctx)`, with its
// arguments as a slice of pointers (`sqlite3_value **`). Beside the
// trampoline, a `local` callback declares its function-pointer type under
// its own name, for `callgate::export_table!`.

use callgate::c_callback;
use std::ffi::{c_int, c_void};

#[allow(non_camel_case_types)]
#[repr(C)]
pub struct sqlite3_context {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
pub struct sqlite3_value {
    _opaque: [u8; 0],
}

unsafe extern "C" {
    fn sqlite3_user_data(ctx: *mut sqlite3_context) -> *mut c_void;
}

pub struct Order {
    pub descending: bool,
    pub comparisons: u64,
}

/// C: `int by_key(const void *a, const void *b, void *order);`
#[c_callback(local, on_panic = 0)]
pub fn by_key(a: *const c_void, b: *const c_void, #[user_data] order: &mut Order) -> c_int {
    // SAFETY: qsort_r passes two elements of an int array.
    let (a, b) = unsafe { (*a.cast::<c_int>(), *b.cast::<c_int>()) };
    order.comparisons += 1;
    let ordering = a.cmp(&b);
    (if order.descending { ordering.reverse() } else { ordering }) as c_int
}

/// C: `void count_args(sqlite3_context *ctx, int argc, sqlite3_value **args);`
#[c_callback(local)]
pub fn count_args(
    ctx: *mut sqlite3_context,
    argc: c_int,
    #[len = argc] args: &[*mut sqlite3_value],
    // SAFETY: SQLite passes the context of a function it registered.
    #[user_data(from = unsafe { sqlite3_user_data(ctx) })] order: &mut Order,
) {
    order.comparisons += args.len() as u64;
}
