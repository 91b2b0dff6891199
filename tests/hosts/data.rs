//! Data across the boundary from a C program compiled against the
//! generated header (`tests/c/linked/data.c`): slices as `(pointer,
//! length)`, owned results freed through the library's free functions,
//! and caller-supplied buffers.

use crate::host;

use std::time::Duration;

fn data(args: &[&str]) -> host::Outcome {
    host::run(host::linked("data").args(args), Duration::from_secs(300))
}

/// `(NULL, 0)` is an empty slice (`None` for an `Option`); NULL with a
/// length, a misaligned pointer and lengths no memory can hold are errors
/// naming the argument; `#[len = count]` with a negative count; 1 MiB
/// buffers both ways; text with NULs by `(pointer, length)` and a cut
/// UTF-8 sequence; owned strings, boxes and arrays (`None`, a failure and
/// a panic give NULL and `*result_len == 0`, as an empty array does, and the
/// free functions take it back); `OutBuf` truncation, exact fit, size
/// queries and a misaligned buffer; overlapping arguments where the
/// callback writes one. 96 checks of value and message, all made by the
/// program.
#[test]
fn every_boundary_case_from_c() {
    let outcome = data(&["boundary"]);
    outcome.assert_ok();
    assert_eq!(outcome.number("checks"), 96.0);
}

/// Strings, boxed counters and arrays made on one thread are read and
/// freed on another; every counter is dropped.
#[test]
fn owned_results_made_on_one_thread_are_freed_on_another() {
    let count = host::size(10_000, 100_000);
    let outcome = data(&["threads", &count.to_string()]);
    outcome.assert_ok();
    assert_eq!(outcome.number("moved"), count as f64);
}

/// 100 000 create/free cycles (1 000 000 with `CALLGATE_FULL=1`) of a
/// string, a boxed counter and a 64-byte array: memory stays flat (the
/// RSS at the end is within 4 MiB of the RSS after the first tenth).
#[test]
fn create_free_cycles_keep_memory_flat() {
    let cycles = host::size(100_000, 1_000_000);
    let outcome = data(&["cycles", &cycles.to_string()]);
    outcome.assert_ok();
    assert!(outcome.number("rss_end_kib") <= outcome.number("rss_warm_kib") + 4096.0);
}
