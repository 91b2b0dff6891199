//! Bindings to the C harness in `c/bench.c`: pthreads that call a
//! callback through a `volatile` function pointer and time themselves with
//! `clock_gettime(CLOCK_MONOTONIC)`.

use core::ffi::{CStr, c_char, c_int, c_schar, c_void};

/// A benchmark callback taking and returning an integer (`x + 1`).
pub type IntFn = unsafe extern "C" fn(i32) -> i32;

/// A benchmark callback taking a string (`x + strlen(text) + 1`).
pub type CstrFn = unsafe extern "C" fn(*const c_char, i32) -> i32;

/// A benchmark callback taking a slice as (pointer, length) and returning
/// the sum of its bytes.
pub type SliceFn = unsafe extern "C" fn(*const u8, usize) -> u32;

/// A benchmark callback taking C's callback data (the `void *` a C API
/// passes back) first and an integer (`x + 1`).
pub type DataFn = unsafe extern "C" fn(*mut c_void, i32) -> i32;

/// A [`DataFn`] and the data C passes it on every call.
#[derive(Clone, Copy)]
pub struct WithData {
    function: DataFn,
    data: *mut c_void,
}

impl WithData {
    /// Pairs `function` with the `data` the harness passes it.
    ///
    /// # Safety
    ///
    /// `function` may be called with `data` from any thread, any number of
    /// times, for the rest of the process.
    pub unsafe fn new(function: DataFn, data: *mut c_void) -> WithData {
        WithData { function, data }
    }
}

/// The string passed to [`CstrFn`] callbacks.
pub const TEXT: &CStr = c"callgate";

/// The bytes passed to [`SliceFn`] callbacks: 16 of them.
pub const DATA: [u8; 16] = *b"callgate-slices!";

/// A callback of any of the shapes.
#[derive(Clone, Copy)]
pub enum Callback {
    /// `int32_t (*)(int32_t)`.
    Int(IntFn),
    /// `int32_t (*)(const char *, int32_t)`, called with [`TEXT`].
    Cstr(CstrFn),
    /// `uint32_t (*)(const uint8_t *, size_t)`, called with [`DATA`].
    Slice(SliceFn),
    /// `int32_t (*)(void *, int32_t)`, called with its data.
    Data(WithData),
}

/// The nullable pointers the C structs take, one of them set.
struct Pointers {
    int_fn: Option<IntFn>,
    cstr_fn: Option<CstrFn>,
    slice_fn: Option<SliceFn>,
    data_fn: Option<DataFn>,
    user_data: *mut c_void,
}

impl Callback {
    fn split(self) -> Pointers {
        let mut pointers = Pointers {
            int_fn: None,
            cstr_fn: None,
            slice_fn: None,
            data_fn: None,
            user_data: core::ptr::null_mut(),
        };
        match self {
            Callback::Int(f) => pointers.int_fn = Some(f),
            Callback::Cstr(f) => pointers.cstr_fn = Some(f),
            Callback::Slice(f) => pointers.slice_fn = Some(f),
            Callback::Data(with) => {
                pointers.data_fn = Some(with.function);
                pointers.user_data = with.data;
            }
        }
        pointers
    }

    /// The sum of the results of `calls` calls (with `x = 0 .. calls` where
    /// the callback takes `x`) when every call ran (none returned its
    /// fallback).
    fn checksum(self, calls: i64) -> i64 {
        let first = match self {
            Callback::Int(_) | Callback::Data(_) => 1,
            Callback::Cstr(_) => 1 + TEXT.count_bytes() as i64,
            Callback::Slice(_) => {
                return calls * DATA.iter().map(|&byte| i64::from(byte)).sum::<i64>();
            }
        };
        calls * first + calls * (calls - 1) / 2
    }
}

/// The calibration callback of the C harness: a fixed chain of dependent
/// additions, then `x + 1`. Its time per call moves only with the machine.
pub fn calibration() -> IntFn {
    bench_calibration
}

/// Callers keep calls per thread (or block) in this range, so `x` fits in
/// an `int32_t` and the checksums in an `i64`.
fn check_calls(calls: i64) {
    assert!(
        (1..i64::from(i32::MAX) / 2).contains(&calls),
        "calls per thread out of range: {calls}"
    );
}

#[repr(C)]
struct BenchLoop {
    int_fn: Option<IntFn>,
    cstr_fn: Option<CstrFn>,
    slice_fn: Option<SliceFn>,
    data_fn: Option<DataFn>,
    text: *const c_char,
    data: *const u8,
    data_len: usize,
    user_data: *mut c_void,
    warmup_calls: i64,
    calls: i64,
}

#[repr(C)]
#[derive(Default)]
struct BenchLoopResult {
    elapsed_ns: i64,
    checksum: i64,
}

#[repr(C)]
struct BenchBlock {
    int_fn: Option<IntFn>,
    cstr_fn: Option<CstrFn>,
    slice_fn: Option<SliceFn>,
    data_fn: Option<DataFn>,
    text: *const c_char,
    data: *const u8,
    data_len: usize,
    user_data: *mut c_void,
    block_calls: i64,
    cycle_ns: *mut i64,
    checksum: i64,
}

#[repr(C)]
struct BenchScaling {
    fn_: Option<IntFn>,
    data_fn: Option<DataFn>,
    user_data: *mut c_void,
    chunk_calls: i64,
    block_ns: i64,
    cycles: c_int,
    one_thread_ns: i64,
    one_thread_chunks: i64,
    two_threads_ns: i64,
    two_threads_chunks: i64,
    checksum: i64,
}

unsafe extern "C" {
    // Safe to call: it takes and returns a plain integer and touches no
    // memory.
    safe fn bench_calibration(x: i32) -> i32;
    // Safe to call: it takes and returns a plain integer, and the memory it
    // touches is its own.
    /// `x + 1` after a first call's least work, in C (see `bench.h`).
    pub safe fn bench_c_bind(x: i32) -> i32;
    /// `x + 1` after one thread-local store, in C (see `bench.h`).
    pub safe fn bench_c_tls(x: i32) -> i32;
    fn bench_scaling_pair(spec: *mut BenchScaling) -> c_int;
    fn bench_interleaved(blocks: *mut BenchBlock, count: c_int, cycles: c_int) -> c_int;
    fn bench_call_loop(spec: *const BenchLoop, result: *mut BenchLoopResult) -> c_int;
    fn bench_first_calls(
        fns: *const IntFn,
        count: c_int,
        threads: c_int,
        cpus: c_int,
        first_ns: *mut i64,
        on_creator_cpu: *mut c_schar,
    ) -> c_int;
    fn bench_churn(fns: *const IntFn, count: c_int, threads: c_int, total_ns: *mut i64) -> c_int;
}

/// On one new pthread, makes `calls / 10` (at least 1000) untimed calls of
/// `callback`, then `calls` timed ones; returns their nanoseconds.
///
/// Panics if a callback returned something other than `x + 1` (a fallback
/// value: the callback failed), naming `name`.
pub fn call_loop(name: &str, callback: Callback, calls: i64) -> f64 {
    check_calls(calls);
    let Pointers {
        int_fn,
        cstr_fn,
        slice_fn,
        data_fn,
        user_data,
    } = callback.split();
    let spec = BenchLoop {
        int_fn,
        cstr_fn,
        slice_fn,
        data_fn,
        text: TEXT.as_ptr(),
        data: DATA.as_ptr(),
        data_len: DATA.len(),
        user_data,
        warmup_calls: (calls / 10).max(1_000),
        calls,
    };
    let mut result = BenchLoopResult::default();
    // SAFETY: `spec` and `result` are valid for the call; the callbacks are
    // valid function pointers of the declared C types, a `DataFn` with its
    // data (`WithData::new`'s obligation); `TEXT` is
    // NUL-terminated and 'static, `DATA` is 'static and `data_len` long.
    let rc = unsafe { bench_call_loop(&spec, &mut result) };
    assert_eq!(rc, 0, "the C harness could not create its thread");
    assert_eq!(
        result.checksum,
        callback.checksum(calls),
        "`{name}` returned wrong values (its fallback: a call failed)"
    );
    result.elapsed_ns as f64
}

/// One callback of [`interleaved`]: its name (for messages), the callback
/// and how many calls make one block.
pub struct Block<'a> {
    /// The callback's name.
    pub name: &'a str,
    /// The callback.
    pub callback: Callback,
    /// Calls per block.
    pub calls: i64,
}

/// On one new pthread, calls each callback of `blocks` for one untimed
/// block, then `cycles` times for one timed block each in turn; returns the
/// nanoseconds per call of each callback in each of its timed blocks.
///
/// Panics like [`call_loop`].
pub fn interleaved(blocks: &[Block<'_>], cycles: usize) -> Vec<Vec<f64>> {
    let mut cycle_ns = vec![vec![0_i64; cycles]; blocks.len()];
    let mut specs: Vec<BenchBlock> = blocks
        .iter()
        .zip(&mut cycle_ns)
        .map(|(block, cycle_ns)| {
            check_calls(block.calls);
            let Pointers {
                int_fn,
                cstr_fn,
                slice_fn,
                data_fn,
                user_data,
            } = block.callback.split();
            BenchBlock {
                int_fn,
                cstr_fn,
                slice_fn,
                data_fn,
                text: TEXT.as_ptr(),
                data: DATA.as_ptr(),
                data_len: DATA.len(),
                user_data,
                block_calls: block.calls,
                cycle_ns: cycle_ns.as_mut_ptr(),
                checksum: 0,
            }
        })
        .collect();
    // SAFETY: `specs` holds `specs.len()` valid entries for the call, with
    // valid callbacks of the declared C types (a `DataFn` with its data,
    // `WithData::new`'s obligation) and room for `cycles` block
    // times each; `TEXT` is NUL-terminated and 'static, `DATA` is 'static
    // and `data_len` long.
    let rc = unsafe {
        bench_interleaved(
            specs.as_mut_ptr(),
            c_int::try_from(specs.len()).expect("block count fits in int"),
            c_int::try_from(cycles).expect("cycle count fits in int"),
        )
    };
    assert_eq!(rc, 0, "the C harness could not create its thread");
    blocks
        .iter()
        .zip(&specs)
        .zip(&cycle_ns)
        .map(|((block, spec), cycle_ns)| {
            assert_eq!(
                spec.checksum,
                block.callback.checksum(block.calls) * cycles as i64,
                "`{}` returned wrong values (its fallback: a call failed)",
                block.name
            );
            cycle_ns
                .iter()
                .map(|&ns| ns as f64 / block.calls as f64)
                .collect()
        })
        .collect()
}

/// Calls per second of one thread alone and of two threads at once.
#[derive(Clone, Copy, Debug)]
pub struct Scaling {
    /// One thread alone.
    pub one_thread: f64,
    /// Two threads together.
    pub two_threads: f64,
}

/// On two new pthreads, alternates `cycles` times between a block of
/// `block_ns` on the first thread alone and a block of as long on both at
/// once, each thread calling `cb` in chunks of `chunk_calls` calls until
/// the block's deadline; returns the call rates of each.
///
/// Panics like [`call_loop`].
pub fn scaling(
    name: &str,
    cb: Callback,
    chunk_calls: i64,
    block_ns: f64,
    cycles: usize,
) -> Scaling {
    check_calls(chunk_calls);
    let Pointers {
        int_fn,
        data_fn,
        user_data,
        ..
    } = cb.split();
    assert!(
        int_fn.is_some() || data_fn.is_some(),
        "`{name}`: the scaling rows call `int (int)` and data-first callbacks"
    );
    let mut spec = BenchScaling {
        fn_: int_fn,
        data_fn,
        user_data,
        chunk_calls,
        block_ns: block_ns as i64,
        cycles: c_int::try_from(cycles).expect("cycle count fits in int"),
        one_thread_ns: 0,
        one_thread_chunks: 0,
        two_threads_ns: 0,
        two_threads_chunks: 0,
        checksum: 0,
    };
    // SAFETY: `spec` is valid for the call and `cb` is a valid callback.
    let rc = unsafe { bench_scaling_pair(&mut spec) };
    assert_eq!(rc, 0, "the C harness could not create its threads");
    let chunks = spec.one_thread_chunks + spec.two_threads_chunks;
    assert_eq!(
        spec.checksum,
        cb.checksum(chunk_calls) * chunks,
        "`{name}` returned wrong values (its fallback: a call failed)"
    );
    let rate = |chunks: i64, ns: i64| (chunks * chunk_calls) as f64 * 1e9 / ns as f64;
    Scaling {
        one_thread: rate(spec.one_thread_chunks, spec.one_thread_ns),
        two_threads: rate(spec.two_threads_chunks, spec.two_threads_ns),
    }
}

/// Where [`first_calls`] runs the threads it creates (`BENCH_*_CPU` in
/// `bench.h`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Cpus {
    /// Where the scheduler puts them.
    Any = 0,
    /// The calling thread and every thread it creates on the CPU the caller
    /// is on at the start.
    One = 1,
    /// Each thread on the other of two CPUs than the one its creator and
    /// the thread before it ran on.
    Other = 2,
}

/// What [`first_calls`] measured, per callback, one value per thread in
/// the order they ran.
pub struct FirstCalls {
    /// How long each thread's first call took, in nanoseconds.
    pub ns: Vec<Vec<f64>>,
    /// Whether each thread ran on the CPU its creator was on just before
    /// creating it; `None` where either CPU is unknown.
    pub on_creator_cpu: Vec<Vec<Option<bool>>>,
}

/// For each of `threads` rounds, creates and joins one pthread per callback
/// of `cbs`, one after another (so the callbacks take turns); returns how
/// long each thread's first call took and whether it ran on the CPU its
/// creator was on.
///
/// `cpus` says where the threads run; `None` if it cannot be had (the
/// affinity cannot be set, or [`Cpus::Other`] and the benchmark may
/// run on one CPU only).
pub fn first_calls(name: &str, cbs: &[IntFn], threads: usize, cpus: Cpus) -> Option<FirstCalls> {
    let mut first_ns = vec![0_i64; threads * cbs.len()];
    let mut on_creator_cpu: Vec<c_schar> = vec![-1; threads * cbs.len()];
    // SAFETY: `first_ns` and `on_creator_cpu` have room for `threads`
    // values per callback; the callbacks are valid.
    let wrong = unsafe {
        bench_first_calls(
            cbs.as_ptr(),
            c_int::try_from(cbs.len()).expect("callback count fits in int"),
            c_int::try_from(threads).expect("thread count fits in int"),
            cpus as c_int,
            first_ns.as_mut_ptr(),
            on_creator_cpu.as_mut_ptr(),
        )
    };
    if wrong == -2 {
        return None;
    }
    check_single_calls(name, wrong);
    Some(FirstCalls {
        ns: first_ns
            .chunks(threads)
            .map(|ns| ns.iter().map(|&ns| ns as f64).collect())
            .collect(),
        on_creator_cpu: on_creator_cpu
            .chunks(threads)
            .map(|on| on.iter().map(|&on| (on >= 0).then_some(on == 1)).collect())
            .collect(),
    })
}

/// For each of `threads` rounds, creates and joins one pthread per callback
/// of `cbs`, one after another (so the callbacks take turns), each calling
/// its callback once before it exits; returns the total nanoseconds of
/// each callback's threads.
pub fn churn(name: &str, cbs: &[IntFn], threads: usize) -> Vec<f64> {
    let mut total_ns = vec![0_i64; cbs.len()];
    // SAFETY: `total_ns` has room for one value per callback; the
    // callbacks are valid.
    let wrong = unsafe {
        bench_churn(
            cbs.as_ptr(),
            c_int::try_from(cbs.len()).expect("callback count fits in int"),
            c_int::try_from(threads).expect("thread count fits in int"),
            total_ns.as_mut_ptr(),
        )
    };
    check_single_calls(name, wrong);
    total_ns.into_iter().map(|ns| ns as f64).collect()
}

fn check_single_calls(name: &str, wrong: c_int) {
    assert!(wrong >= 0, "the C harness could not create its threads");
    assert_eq!(
        wrong, 0,
        "`{name}` returned wrong values (its fallback: a call failed)"
    );
}
