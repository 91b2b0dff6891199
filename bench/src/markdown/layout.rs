//! The layout of the `--markdown` tables: each line's label, its unit and
//! the rows whose figures fill its cells.

use crate::plan;

/// The places of the main table's first three columns, in order.
pub const PLACES: [&str; 3] = ["cdylib", "binary", "portable_tls"];

/// How a line's numbers read.
#[derive(Clone, Copy)]
pub enum Unit {
    /// Nanoseconds or microseconds, as the line's label says: bare numbers.
    Plain,
    /// A share: `25 % (0–70 %)`.
    Percent,
    /// A ratio: `1.99× (1.70–2.15)`.
    Ratio,
}

/// What one line shows in the three place columns.
#[derive(Clone, Copy)]
pub enum Cells {
    /// The row's median (min–max) in each place that measured it.
    Summary(&'static str),
    /// The difference of two rows' medians, in bold: a figure the report
    /// checks against a target.
    Difference(&'static str, &'static str),
    /// A row of the machine's, in the first column only.
    Machine(&'static str),
}

/// What one line shows in the Go column.
#[derive(Clone, Copy)]
pub enum Go {
    /// Nothing to compare: a dash.
    None,
    /// A Go row's median (min–max).
    Summary(&'static str),
    /// A Go row's median minus a `cdylib` row's.
    Difference(&'static str, &'static str),
}

/// One line of the main table.
pub struct Line {
    pub label: &'static str,
    pub unit: Unit,
    pub cells: Cells,
    pub go: Go,
}

const fn line(label: &'static str, unit: Unit, cells: Cells, go: Go) -> Line {
    Line {
        label,
        unit,
        cells,
        go,
    }
}

/// The main table's lines, in order.
pub const LINES: [Line; 46] = [
    line(
        "calibration: a fixed chain of 100 dependent additions in C, ns",
        Unit::Plain,
        Cells::Machine(plan::CALIBRATION),
        Go::None,
    ),
    line(
        "… share of its 100 µs blocks that ran slow, per sample",
        Unit::Percent,
        Cells::Machine(plan::SLOW_BLOCKS),
        Go::None,
    ),
    line(
        "C thread calls a plain C-ABI function (the floor), ns",
        Unit::Plain,
        Cells::Summary("cthread.raw_ns"),
        Go::None,
    ),
    line(
        "… a `#[c_callback]`, thread bound, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_ns"),
        Go::Summary("go.cthread_ns"),
    ),
    line(
        "… the boundary's own cost, bound − floor (medians), ns",
        Unit::Plain,
        Cells::Difference("cthread.bound_ns", "cthread.raw_ns"),
        Go::Difference("go.cthread_ns", "cthread.raw_ns"),
    ),
    line(
        "… bound − floor, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_minus_raw_ns"),
        Go::None,
    ),
    line(
        "… block by block, in cycles where the calibration chain ran fast, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_minus_raw_fast_ns"),
        Go::None,
    ),
    line(
        "… and where it ran slow, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.bound_minus_raw_slow_ns"),
        Go::None,
    ),
    line(
        "… with `attach = per_call`, ns",
        Unit::Plain,
        Cells::Summary("cthread.per_call_ns"),
        Go::None,
    ),
    line(
        "… per_call − a raw call taking turns on its thread, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.per_call_minus_raw_ns"),
        Go::None,
    ),
    line(
        "… with one `#[local]` parameter, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_ns"),
        Go::None,
    ),
    line(
        "… local − bound, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_minus_bound_ns"),
        Go::None,
    ),
    line(
        "… block by block, in cycles where the calibration chain ran fast, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_minus_bound_fast_ns"),
        Go::None,
    ),
    line(
        "… and where it ran slow, per round, ns",
        Unit::Plain,
        Cells::Summary("cthread.local_minus_bound_slow_ns"),
        Go::None,
    ),
    line(
        "… with one `&CStr`, minus a plain fn doing the same `strlen` (medians), ns",
        Unit::Plain,
        Cells::Difference("cthread.cstr_ns", "cthread.raw_cstr_ns"),
        Go::None,
    ),
    line(
        "… with one `&[u8]` of 16 bytes summed, ns",
        Unit::Plain,
        Cells::Summary("cthread.sum_ns"),
        Go::None,
    ),
    line(
        "… a plain fn summing the same 16 bytes, ns",
        Unit::Plain,
        Cells::Summary("cthread.raw_sum_ns"),
        Go::None,
    ),
    line(
        "… a `#[user_data] &Step` callback, ns",
        Unit::Plain,
        Cells::Summary("cthread.user_data_ns"),
        Go::None,
    ),
    line(
        "… a `Closure::new` (`FnMut`, calls take turns), ns",
        Unit::Plain,
        Cells::Summary("cthread.closure_ns"),
        Go::None,
    ),
    line(
        "… a `Closure::concurrent` (`Fn + Sync`), ns",
        Unit::Plain,
        Cells::Summary("cthread.closure_concurrent_ns"),
        Go::None,
    ),
    line(
        "… make a `OnceClosure` and call it once (the call frees it), ns",
        Unit::Plain,
        Cells::Summary("cthread.once_cycle_ns"),
        Go::None,
    ),
    line(
        "… make a `Closure::new`, hand it to C, call it once, free it, ns",
        Unit::Plain,
        Cells::Summary("cthread.closure_cycle_ns"),
        Go::None,
    ),
    line(
        "two threads against one, calls per second in the same blocks, per round: bound",
        Unit::Ratio,
        Cells::Summary("scaling.bound_2t_1t"),
        Go::Summary("go.scaling_2t_1t"),
    ),
    line(
        "… the floor",
        Unit::Ratio,
        Cells::Summary("scaling.raw_2t_1t"),
        Go::None,
    ),
    line(
        "… a `Closure::concurrent` both threads call",
        Unit::Ratio,
        Cells::Summary("scaling.closure_concurrent_2t_1t"),
        Go::None,
    ),
    line(
        "… a `Closure::new` both threads call (their calls take turns)",
        Unit::Ratio,
        Cells::Summary("scaling.closure_2t_1t"),
        Go::None,
    ),
    line(
        "… a `std::sync::Mutex` both threads lock (the floor for calls that take turns)",
        Unit::Ratio,
        Cells::Summary("scaling.mutex_2t_1t"),
        Go::None,
    ),
    line(
        "create a C thread, one plain call, exit, join, µs",
        Unit::Plain,
        Cells::Summary("churn.create_join_us"),
        Go::None,
    ),
    line(
        "the same with one callback, µs",
        Unit::Plain,
        Cells::Summary("churn.create_callback_join_us"),
        Go::Summary("go.create_callback_join_us"),
    ),
    line(
        "… the callback's over the plain call's, in the same samples, per round",
        Unit::Ratio,
        Cells::Summary("churn.create_callback_join_ratio"),
        Go::None,
    ),
    line(
        "first callback on a new thread, ns",
        Unit::Plain,
        Cells::Summary("first_call_ns"),
        Go::Summary("go.first_call_ns"),
    ),
    line(
        "… a plain C-ABI function's first call on a new thread, ns",
        Unit::Plain,
        Cells::Summary("first_call.raw_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C: TLS slot, lock-free pop, `pthread_setspecific`, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_ns"),
        Go::None,
    ),
    line(
        "… the callback's minus the C version's, per round, ns",
        Unit::Plain,
        Cells::Summary("first_call.minus_c_bind_ns"),
        Go::None,
    ),
    line(
        "… one store to a `_Thread_local` variable in C, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_tls_ns"),
        Go::None,
    ),
    line(
        "… share of those threads that ran on the CPU that created them",
        Unit::Percent,
        Cells::Summary("first_call.on_creator_cpu_pct"),
        Go::None,
    ),
    line(
        "… the callback's first call on those threads, ns",
        Unit::Plain,
        Cells::Summary("first_call.on_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "… on the others, ns",
        Unit::Plain,
        Cells::Summary("first_call.off_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C, on the threads that ran on their creator's CPU, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_on_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "… on the others, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_off_creator_cpu_ns"),
        Go::None,
    ),
    line(
        "first callback on a new thread, every thread on one CPU, ns",
        Unit::Plain,
        Cells::Summary("first_call.one_cpu_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C, every thread on one CPU, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_one_cpu_ns"),
        Go::None,
    ),
    line(
        "… the callback's minus the C version's, per round, ns",
        Unit::Plain,
        Cells::Summary("first_call.one_cpu_minus_c_bind_ns"),
        Go::None,
    ),
    line(
        "first callback on a new thread, each thread on another CPU than its creator and \
         the thread before it, ns",
        Unit::Plain,
        Cells::Summary("first_call.other_cpu_ns"),
        Go::None,
    ),
    line(
        "… the least a first call does, in C, the same way, ns",
        Unit::Plain,
        Cells::Summary("first_call.c_bind_other_cpu_ns"),
        Go::None,
    ),
    line(
        "… the callback's minus the C version's, per round, ns",
        Unit::Plain,
        Cells::Summary("first_call.other_cpu_minus_c_bind_ns"),
        Go::None,
    ),
];

/// The dynamic-TLS table's lines: label and row (all `cdylib`, in ns).
pub const DYNAMIC_LINES: [(&str, &str); 10] = [
    ("raw call, library in static TLS", "cthread.raw_ns"),
    ("bound callback, library in static TLS", "cthread.bound_ns"),
    (
        "raw call, library in dynamic TLS (a later copy)",
        "cthread.raw_dynamic_tls_ns",
    ),
    (
        "bound callback, library in dynamic TLS",
        "cthread.bound_dynamic_tls_ns",
    ),
    (
        "… with one `#[local]` parameter",
        "cthread.local_dynamic_tls_ns",
    ),
    (
        "… local − bound, per round",
        "cthread.local_minus_bound_dynamic_tls_ns",
    ),
    (
        "… with `attach = per_call`",
        "cthread.per_call_dynamic_tls_ns",
    ),
    (
        "… per_call − a raw call taking turns on its thread, per round",
        "cthread.per_call_minus_raw_dynamic_tls_ns",
    ),
    (
        "first callback on a new thread",
        "first_call_dynamic_tls_ns",
    ),
    (
        "… a plain C-ABI function's first call on a new thread",
        "first_call.raw_dynamic_tls_ns",
    ),
];

/// The dynamic-TLS table's lines after [`DYNAMIC_LINES`], where the run
/// measured them: the C read of a thread-local through its descriptor,
/// its library in dynamic TLS too, and the bound callback over it; the
/// same read as a new thread's first, the least a first call does in C
/// with its slot there, and the callback's first call over each.
pub const DYNAMIC_FLOOR_LINES: [(&str, &str); 6] = [
    (
        "a C function reading a `_Thread_local` through its TLS descriptor, library in dynamic TLS",
        "cthread.c_tls_read_dynamic_tls_ns",
    ),
    (
        "… bound callback in dynamic TLS minus it, per round",
        "cthread.bound_minus_c_tls_read_dynamic_tls_ns",
    ),
    (
        "… the same read as a new thread's first (glibc allocates the thread's block)",
        "first_call.c_tls_read_dynamic_tls_ns",
    ),
    (
        "… first callback on a new thread in dynamic TLS minus it, per round",
        "first_call_minus_c_tls_read_dynamic_tls_ns",
    ),
    (
        "the least a first call does, in C (TLS slot, lock-free pop, `pthread_setspecific`), its slot in that library",
        "first_call.c_bind_dynamic_tls_ns",
    ),
    (
        "… first callback on a new thread in dynamic TLS minus it, per round",
        "first_call_minus_c_bind_dynamic_tls_ns",
    ),
];

/// The sizes of the environment table, as in `env.*` keys.
pub const ENV_SIZES: [usize; 3] = [100, 1_000, 10_000];
