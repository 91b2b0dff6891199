//! glib calling Rust from its own threads: a `g_thread_pool_new_full`
//! pool whose function is a `#[c_callback]` with the pool's `#[user_data]`
//! and whose items are `UserData` freed by the pool's `GDestroyNotify`
//! when they never run; pools whose function is a `Closure`; a
//! `g_thread_new` thread running a `OnceClosure`. glib parks its pool
//! threads instead of ending them, so their contexts are released only
//! when glib stops them, later than `g_thread_pool_free` returns:
//! `stats()` is polled for it.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use callgate::{Closure, OnceClosure, UserData, c_callback};
use callgate_dev::Hold;

#[allow(non_camel_case_types)]
#[repr(C)]
struct GThreadPool {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
struct GThread {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
struct GError {
    _opaque: [u8; 0],
}

type GFunc = unsafe extern "C" fn(*mut c_void, *mut c_void);
type GThreadFunc = unsafe extern "C" fn(*mut c_void) -> *mut c_void;
type GDestroyNotify = unsafe extern "C" fn(*mut c_void);

unsafe extern "C" {
    fn g_thread_pool_new_full(
        func: Option<GFunc>,
        user_data: *mut c_void,
        item_free_func: Option<GDestroyNotify>,
        max_threads: c_int,
        exclusive: c_int,
        error: *mut *mut GError,
    ) -> *mut GThreadPool;
    fn g_thread_pool_push(
        pool: *mut GThreadPool,
        data: *mut c_void,
        error: *mut *mut GError,
    ) -> c_int;
    fn g_thread_pool_free(pool: *mut GThreadPool, immediate: c_int, wait: c_int);
    fn g_thread_pool_set_max_unused_threads(max_threads: c_int);
    fn g_thread_pool_stop_unused_threads();
    fn g_thread_pool_get_num_unused_threads() -> c_uint;
    fn g_thread_new(
        name: *const c_char,
        func: Option<GThreadFunc>,
        data: *mut c_void,
    ) -> *mut GThread;
    fn g_thread_join(thread: *mut GThread) -> *mut c_void;
}

const TRUE: c_int = 1;
const FALSE: c_int = 0;

/// glib's unused-thread pool is process-wide: the tests that use it in
/// this process take turns (those that read callgate's statistics run in
/// processes of their own).
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The pool's user data.
#[derive(Default)]
struct PoolState {
    total: AtomicU64,
    ran: AtomicUsize,
    threads: Mutex<Vec<ThreadId>>,
}

/// One pushed item, owned by the pool until the function takes it.
struct Job {
    value: u64,
    hold: Option<Arc<Hold>>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Job {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

/// The pool function, `GFunc`: the item first, the pool's user data last.
/// It owns the item, so it takes it back from its pointer.
#[c_callback(local)]
fn run_job(item: *mut c_void, #[user_data] pool: &PoolState) {
    // SAFETY: every item pushed is a `UserData<Job>`, given to the function
    // once and not freed by the pool afterwards.
    let job = unsafe { UserData::<Job>::from_raw(item) };
    if let Some(hold) = &job.hold {
        hold.hold();
    }
    pool.total.fetch_add(job.value, Ordering::Relaxed);
    pool.ran.fetch_add(1, Ordering::Relaxed);
    let me = std::thread::current().id();
    let mut threads = pool.threads.lock().unwrap();
    if !threads.contains(&me) {
        threads.push(me);
    }
}

fn new_pool(
    func: GFunc,
    user_data: *mut c_void,
    item_free: Option<GDestroyNotify>,
    max_threads: c_int,
    exclusive: c_int,
) -> *mut GThreadPool {
    let mut error = std::ptr::null_mut();
    // SAFETY: the function, its user data and the item destroy function
    // belong together.
    let pool = unsafe {
        g_thread_pool_new_full(
            Some(func),
            user_data,
            item_free,
            max_threads,
            exclusive,
            &mut error,
        )
    };
    assert!(
        !pool.is_null() && error.is_null(),
        "g_thread_pool_new_full failed"
    );
    pool
}

fn push(pool: *mut GThreadPool, item: *mut c_void) {
    // SAFETY: a live pool; the item is what its function expects.
    let pushed = unsafe { g_thread_pool_push(pool, item, std::ptr::null_mut()) };
    assert_eq!(pushed, TRUE);
}

/// Polls `done` every millisecond for up to 10 seconds.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Ends the threads glib keeps parked for later pools and waits until
/// their contexts are released: no glib thread is bound afterwards.
fn end_parked_threads() {
    // SAFETY: plain glib calls.
    unsafe {
        g_thread_pool_set_max_unused_threads(0);
        g_thread_pool_stop_unused_threads();
    }
    // SAFETY: a plain glib call.
    eventually(
        "glib's parked threads to end",
        || unsafe { g_thread_pool_get_num_unused_threads() } == 0,
    );
    // Their key destructors release the contexts on their way out, after
    // the calls above returned: poll.
    eventually("the parked threads' contexts to be released", || {
        callgate::stats().contexts_bound == 0
    });
}

/// 200 items on a 4-thread pool: each run once, on glib's threads, and
/// dropped once; the pool's state comes back after `g_thread_pool_free`.
/// glib parks the pool's threads for later pools, still bound; their
/// contexts are released only once glib ends them, after the call that
/// asks it to has returned: `stats()` is polled for it.
#[test]
fn a_pool_runs_every_item_on_its_threads() {
    crate::child::alone(|| {
        end_parked_threads();
        // SAFETY: a plain glib call: park up to 8 threads.
        unsafe { g_thread_pool_set_max_unused_threads(8) };
        let drops = Arc::new(AtomicUsize::new(0));
        let before = callgate::stats();
        let state = UserData::new(PoolState::default()).into_raw();
        let pool = new_pool(run_job, state, Some(UserData::<Job>::destroy), 4, FALSE);
        for value in 1..=200 {
            let job = Job {
                value,
                hold: None,
                drops: Arc::clone(&drops),
            };
            push(pool, UserData::new(job).into_raw());
        }
        // SAFETY: the pool is not used again; this waits for every item.
        unsafe { g_thread_pool_free(pool, FALSE, TRUE) };
        // SAFETY: the pool, the only user of the state, is gone.
        let state = unsafe { UserData::<PoolState>::from_raw(state) }.into_inner();

        assert_eq!(drops.load(Ordering::Relaxed), 200);
        assert_eq!(state.ran.load(Ordering::Relaxed), 200);
        assert_eq!(state.total.load(Ordering::Relaxed), 200 * 201 / 2);
        let threads = state.threads.lock().unwrap();
        assert!(!threads.is_empty() && threads.len() <= 4);
        assert!(!threads.contains(&std::thread::current().id()));
        // One bind per pool thread that ran an item.
        let binds = callgate::stats().binds - before.binds;
        assert_eq!(binds, threads.len() as u64);

        end_parked_threads();
        assert_eq!(callgate::stats().releases - before.releases, binds);
        // SAFETY: a plain glib call: glib's default.
        unsafe { g_thread_pool_set_max_unused_threads(2) };
    });
}

/// Freeing a pool at once (`immediate`) leaves its queued items to the
/// pool's `GDestroyNotify`, `UserData::<Job>::destroy`, which glib calls
/// when the pool goes away after its last running item: every item is
/// dropped exactly once, run or not.
#[test]
fn items_a_pool_never_ran_are_freed_by_its_destroy_notify() {
    let _serial = serial();
    static STATE: PoolState = PoolState {
        total: AtomicU64::new(0),
        ran: AtomicUsize::new(0),
        threads: Mutex::new(Vec::new()),
    };
    let drops = Arc::new(AtomicUsize::new(0));
    let hold = Arc::new(Hold::default());
    // One exclusive thread: the first item holds it while the rest queue.
    let state = (&raw const STATE).cast_mut().cast::<c_void>();
    let pool = new_pool(run_job, state, Some(UserData::<Job>::destroy), 1, TRUE);
    for value in 1..=11 {
        let job = Job {
            value,
            hold: (value == 1).then(|| Arc::clone(&hold)),
            drops: Arc::clone(&drops),
        };
        push(pool, UserData::new(job).into_raw());
    }
    hold.wait_until_holding();
    // SAFETY: the pool is not used again; with `immediate` no queued item
    // starts, and without `wait` this returns at once.
    unsafe { g_thread_pool_free(pool, TRUE, FALSE) };
    hold.release();
    eventually("every item to be dropped", || {
        drops.load(Ordering::Relaxed) == 11
    });
    assert_eq!(STATE.ran.load(Ordering::Relaxed), 1);
    assert_eq!(STATE.total.load(Ordering::Relaxed), 1);
}

/// A `Closure` as the pool function (`GFunc` takes its data last): an
/// `Fn + Sync` one runs on several pool threads at once, an `FnMut` one
/// one call at a time; Rust keeps each and drops it after the pool.
#[test]
fn closures_as_pool_functions() {
    let _serial = serial();
    let total = Arc::new(AtomicU64::new(0));
    let sum = Arc::clone(&total);
    let concurrent = Closure::concurrent((), move |item: *mut c_void| {
        sum.fetch_add(item as u64, Ordering::Relaxed);
    });
    let pool = new_pool(concurrent.data_last(), concurrent.data(), None, 4, FALSE);
    for item in 1..=100_u64 {
        push(pool, item as *mut c_void);
    }
    // SAFETY: waits for every item; the pool is not used again.
    unsafe { g_thread_pool_free(pool, FALSE, TRUE) };
    drop(concurrent);
    assert_eq!(total.load(Ordering::Relaxed), 5050);
    assert_eq!(Arc::strong_count(&total), 1, "the closure was dropped");

    // An `FnMut` needs no lock of its own: its calls take turns.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut items = Vec::new();
    let report = Arc::clone(&seen);
    let exclusive = Closure::new((), move |item: *mut c_void| {
        items.push(item as u64);
        if items.len() == 100 {
            *report.lock().unwrap() = std::mem::take(&mut items);
        }
    });
    let pool = new_pool(exclusive.data_last(), exclusive.data(), None, 4, FALSE);
    for item in 1..=100_u64 {
        push(pool, item as *mut c_void);
    }
    // SAFETY: as above.
    unsafe { g_thread_pool_free(pool, FALSE, TRUE) };
    drop(exclusive);
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, (1..=100).collect::<Vec<u64>>());
}

/// A `OnceClosure` as a `g_thread_new` thread function: it runs once on
/// glib's new thread, frees itself there, and its result comes back
/// through `g_thread_join`; the thread's context is released before the
/// join returns (the thread has ended).
#[test]
fn a_once_closure_runs_a_glib_thread() {
    crate::child::alone(|| {
        struct Probe(Arc<Mutex<Option<ThreadId>>>);
        impl Drop for Probe {
            fn drop(&mut self) {
                *self.0.lock().unwrap() = Some(std::thread::current().id());
            }
        }
        let dropped_on = Arc::new(Mutex::new(None));
        let probe = Probe(Arc::clone(&dropped_on));
        let ran_on = Arc::new(Mutex::new(None));
        let ran = Arc::clone(&ran_on);
        let before = callgate::stats();
        let start = OnceClosure::new(std::ptr::null_mut(), move || -> *mut c_void {
            let _probe = probe;
            *ran.lock().unwrap() = Some(std::thread::current().id());
            Box::into_raw(Box::new(42_u64)).cast()
        })
        .into_raw_parts();
        // SAFETY: the closure's parts; glib calls the function once.
        let thread = unsafe { g_thread_new(c"once".as_ptr(), Some(start.data_first), start.data) };
        // SAFETY: joins the thread once.
        let result = unsafe { g_thread_join(thread) };
        // SAFETY: the closure returned a `Box<u64>`.
        let result = unsafe { Box::from_raw(result.cast::<u64>()) };
        assert_eq!(*result, 42);
        let ran_on = ran_on.lock().unwrap().expect("the closure ran");
        assert_ne!(ran_on, std::thread::current().id());
        assert_eq!(*dropped_on.lock().unwrap(), Some(ran_on));
        let after = callgate::stats();
        assert!(
            after.releases > before.releases,
            "released when the thread ended"
        );
    });
}
