//! A panic-safe comparator for C's `qsort`.
//!
//! ```text
//! cargo run --release --example qsort
//! ```
//!
//! A comparator is the classic Rust callback: C's `qsort` calls it through a
//! function pointer. If a plain `extern "C" fn` comparator panics, the panic
//! cannot unwind through `qsort` and the whole process aborts.
//! `#[c_callback(local, on_panic = 0)]` makes the comparator an
//! `extern "C" fn` value that stops the panic at the boundary, returns 0
//! ("equal") to `qsort`, and records the message as the thread's last error,
//! so the C code carries on.

use core::ffi::{c_int, c_void};

use callgate::c_callback;
// The C side lives in the dev package's harness library.
use callgate_dev as _;

#[derive(Clone, Copy)]
struct City {
    name: &'static str,
    population: u32,
}

/// Orders cities by population, largest first.
#[c_callback(local, on_panic = 0)]
fn by_population(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort passes pointers to two elements of the `City` array.
    let (a, b) = unsafe { (&*a.cast::<City>(), &*b.cast::<City>()) };
    b.population.cmp(&a.population) as c_int
}

/// Orders temperatures, and panics on NaN, which has no place in the order
/// (the `partial_cmp(..).unwrap()` of many a comparator).
#[c_callback(local, on_panic = 0)]
fn by_temperature(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort passes pointers to two elements of the `f64` array.
    let (a, b) = unsafe { (*a.cast::<f64>(), *b.cast::<f64>()) };
    a.partial_cmp(&b)
        .unwrap_or_else(|| panic!("cannot order {a} and {b}")) as c_int
}

unsafe extern "C" {
    /// Sorts with `qsort`, then checks that every value is still there.
    fn qsort_sort_and_check(
        values: *mut f64,
        count: usize,
        compare: unsafe extern "C" fn(*const c_void, *const c_void) -> c_int,
    ) -> c_int;
}

fn main() {
    // The panics are reported through the last error and `stats()`; keep the
    // default hook's message for each of them off the terminal.
    std::panic::set_hook(Box::new(|_| {}));

    println!("callgate qsort example: a Rust comparator handed to C's qsort");
    println!();

    let mut cities = [
        City {
            name: "Lagos",
            population: 15_388_000,
        },
        City {
            name: "Tokyo",
            population: 37_115_000,
        },
        City {
            name: "Lima",
            population: 11_283_000,
        },
        City {
            name: "Delhi",
            population: 33_807_000,
        },
        City {
            name: "Cairo",
            population: 22_623_000,
        },
        City {
            name: "Osaka",
            population: 18_967_000,
        },
    ];
    // SAFETY: `cities` holds `cities.len()` elements of `size_of::<City>()`
    // bytes, and `by_population` compares two of them.
    unsafe {
        libc::qsort(
            cities.as_mut_ptr().cast(),
            cities.len(),
            size_of::<City>(),
            Some(by_population),
        );
    }
    println!("1. libc::qsort with #[c_callback(local)] fn by_population:");
    for city in &cities {
        println!(
            "     {:<6} {:>11}",
            city.name,
            callgate_dev::thousands(city.population)
        );
    }
    println!();

    println!("2. by_temperature, which panics on NaN as partial_cmp(..).unwrap() would:");
    println!("     (had it been a plain extern \"C\" fn, the panic would abort the process)");
    let (warm, nan) = (21.5_f64, f64::NAN);
    let result = by_temperature(
        (&raw const warm).cast::<c_void>(),
        (&raw const nan).cast::<c_void>(),
    );
    println!("     by_temperature(21.5, NaN) returned {result}");
    println!(
        "     last error: {}",
        callgate::last_error().unwrap_or_default()
    );
    println!();

    let mut readings = [21.5, 19.0, 23.25, f64::NAN, 18.5, 22.0, 20.75];
    println!("   C's qsort_sort_and_check sorts {readings:?} with it:");
    let before = callgate::stats();
    // SAFETY: `readings` holds `readings.len()` doubles and `by_temperature`
    // compares two of them.
    let intact =
        unsafe { qsort_sort_and_check(readings.as_mut_ptr(), readings.len(), by_temperature) };
    let panics = callgate::stats().panics_caught - before.panics_caught;
    if intact == 1 {
        println!(
            "     qsort returned normally and C carried on: every reading is still in the array"
        );
    } else {
        println!("     qsort returned, but the array lost or duplicated a value");
    }
    println!("     panics caught: {panics} (callgate::stats().panics_caught)");
    println!(
        "     last error: {}",
        callgate::last_error().unwrap_or_default()
    );
    println!("     result: {readings:?}");
    println!("     (NaN compares \"equal\" to everything, so the order around it is unspecified)");
    assert_eq!(intact, 1, "qsort lost or duplicated a value");
}
