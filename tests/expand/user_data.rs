// The expansion snapshot's input for user data: a `local` comparator with
// a `#[user_data]` parameter, as glibc's `qsort_r` calls it. Beside the
// trampoline, a `local` callback declares its function-pointer type under
// its own name, for `callgate::export_table!`.

use callgate::c_callback;
use std::ffi::{c_int, c_void};

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
