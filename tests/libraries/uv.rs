//! libuv calling Rust from its own thread pool: `uv_queue_work` runs a
//! `#[c_callback]` work function on libuv's worker threads and the
//! completion on the loop's thread. Each request carries its job in
//! `req->data` as `UserData`: the work function borrows it, the completion
//! takes it back and drops it — once, also for a panicking job and for
//! cancelled requests whose work never ran.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use callgate::{UserData, c_callback};

#[allow(non_camel_case_types)]
#[repr(C)]
struct uv_loop_t {
    _opaque: [u8; 0],
}

/// The start of libuv's `uv_work_t`: every request begins with the
/// public `void *data` field. The rest of the (larger) struct is libuv's,
/// allocated with `uv_req_size(UV_WORK)`.
#[allow(non_camel_case_types)]
#[repr(C)]
struct uv_work_t {
    data: *mut c_void,
}

type WorkCb = unsafe extern "C" fn(*mut uv_work_t);
type AfterWorkCb = unsafe extern "C" fn(*mut uv_work_t, c_int);

unsafe extern "C" {
    fn uv_loop_size() -> usize;
    fn uv_loop_init(event_loop: *mut uv_loop_t) -> c_int;
    fn uv_loop_close(event_loop: *mut uv_loop_t) -> c_int;
    fn uv_run(event_loop: *mut uv_loop_t, mode: c_int) -> c_int;
    fn uv_req_size(kind: c_int) -> usize;
    fn uv_req_type_name(kind: c_int) -> *const c_char;
    fn uv_queue_work(
        event_loop: *mut uv_loop_t,
        req: *mut uv_work_t,
        work: Option<WorkCb>,
        after_work: Option<AfterWorkCb>,
    ) -> c_int;
    fn uv_cancel(req: *mut uv_work_t) -> c_int;
}

/// `UV_WORK` in libuv's `uv_req_type` (checked against `uv_req_type_name`).
const UV_WORK: c_int = 7;
const UV_RUN_DEFAULT: c_int = 0;
const UV_ECANCELED: c_int = -libc::ECANCELED;

/// What a job reports when its request completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Report {
    input: u64,
    output: Option<u64>,
    /// The thread the work ran on.
    worker: Option<libc::pthread_t>,
    status: c_int,
}

/// Released jobs start; held ones wait for it.
#[derive(Default)]
struct Hold {
    released: Mutex<bool>,
    wake: Condvar,
}

struct Job {
    input: u64,
    output: Option<u64>,
    worker: Option<libc::pthread_t>,
    hold: Option<Arc<Hold>>,
    reports: Arc<Mutex<Vec<Report>>>,
    drops: Arc<AtomicUsize>,
}

impl Drop for Job {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
    }
}

/// On a libuv worker thread: borrows the job in `req->data`.
#[c_callback(local)]
fn work(req: &mut uv_work_t) -> Result<(), &'static str> {
    // SAFETY: `data` is the `UserData<Job>` the request was queued with; the
    // completion takes it back only after this returns.
    let job = unsafe { UserData::<Job>::mut_from_raw(req.data) }.ok_or("the request has no job")?;
    if let Some(hold) = &job.hold {
        let mut released = hold.released.lock().unwrap();
        while !*released {
            released = hold.wake.wait(released).unwrap();
        }
    }
    // SAFETY: always safe to call.
    job.worker = Some(unsafe { libc::pthread_self() });
    if job.input == 13 {
        panic!("job 13 is unlucky");
    }
    job.output = Some(job.input * job.input);
    Ok(())
}

/// On the loop's thread: takes the job back from `req->data`, reports it,
/// drops it and frees the request.
#[c_callback(local)]
fn after_work(req: *mut uv_work_t, status: c_int) {
    // SAFETY: libuv passes the request it completed; `data` is the
    // `UserData<Job>` it was queued with, and nothing uses it after this.
    let job = unsafe { UserData::<Job>::from_raw((*req).data) };
    job.reports.lock().unwrap().push(Report {
        input: job.input,
        output: job.output,
        worker: job.worker,
        status,
    });
    drop(job);
    // SAFETY: allocated with `malloc` by `queue`; libuv is done with it.
    unsafe { libc::free(req.cast()) };
}

struct Loop(*mut uv_loop_t);

impl Loop {
    fn new() -> Loop {
        // SAFETY: libuv's sizes; the loop is initialised before use.
        let event_loop = unsafe { libc::malloc(uv_loop_size()) }.cast::<uv_loop_t>();
        assert!(!event_loop.is_null());
        // SAFETY: memory of `uv_loop_size()` bytes.
        assert_eq!(unsafe { uv_loop_init(event_loop) }, 0);
        Loop(event_loop)
    }

    /// Queues `job`; returns its request.
    fn queue(&self, job: Job) -> *mut uv_work_t {
        // SAFETY: a request of libuv's size, whose `data` is set before
        // libuv sees it.
        let req = unsafe { libc::malloc(uv_req_size(UV_WORK)) }.cast::<uv_work_t>();
        assert!(!req.is_null());
        // SAFETY: as above.
        unsafe { (*req).data = UserData::new(job).into_raw() };
        // SAFETY: an initialised loop and request; the callbacks take the
        // request's job as described on them.
        let rc = unsafe { uv_queue_work(self.0, req, Some(work), Some(after_work)) };
        assert_eq!(rc, 0);
        req
    }

    fn run(&self) {
        // SAFETY: an initialised loop, run on this thread only.
        assert_eq!(unsafe { uv_run(self.0, UV_RUN_DEFAULT) }, 0);
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        // SAFETY: no request is pending after `run`.
        assert_eq!(unsafe { uv_loop_close(self.0) }, 0);
        // SAFETY: allocated with `malloc` in `new`.
        unsafe { libc::free(self.0.cast()) };
    }
}

fn job(
    input: u64,
    hold: Option<&Arc<Hold>>,
    reports: &Arc<Mutex<Vec<Report>>>,
    drops: &Arc<AtomicUsize>,
) -> Job {
    Job {
        input,
        output: None,
        worker: None,
        hold: hold.cloned(),
        reports: Arc::clone(reports),
        drops: Arc::clone(drops),
    }
}

#[test]
fn the_work_request_type_is_uv_work() {
    // SAFETY: libuv returns a static C string.
    let name = unsafe { CStr::from_ptr(uv_req_type_name(UV_WORK)) };
    assert_eq!(name, c"work");
}

/// 64 jobs on libuv's pool: each computed on a worker thread, none on the
/// loop's; job 13 panics (its output stays empty, the request completes
/// normally); every job dropped once.
#[test]
fn jobs_run_on_the_pool_and_come_back_once() {
    crate::child::alone(|| {
        let reports = Arc::new(Mutex::new(Vec::new()));
        let drops = Arc::new(AtomicUsize::new(0));
        let before = callgate::stats();
        let event_loop = Loop::new();
        for input in 0..64 {
            event_loop.queue(job(input, None, &reports, &drops));
        }
        event_loop.run();
        drop(event_loop);

        assert_eq!(drops.load(Ordering::Relaxed), 64);
        let mut reports = reports.lock().unwrap().clone();
        reports.sort_by_key(|report| report.input);
        assert_eq!(reports.len(), 64);
        // SAFETY: always safe to call.
        let loop_thread = unsafe { libc::pthread_self() };
        for report in &reports {
            assert_eq!(report.status, 0);
            let worker = report.worker.expect("the work ran");
            // SAFETY: comparing thread ids.
            assert_eq!(unsafe { libc::pthread_equal(worker, loop_thread) }, 0);
            let expected = (report.input != 13).then(|| report.input * report.input);
            assert_eq!(report.output, expected, "{report:?}");
        }
        let after = callgate::stats();
        assert!(after.panics_caught > before.panics_caught);
    });
}

/// Requests cancelled before a worker took them complete with
/// `UV_ECANCELED` without running their work; their jobs come back and
/// are dropped once, like the others.
#[test]
fn cancelled_requests_drop_their_jobs_without_running() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let drops = Arc::new(AtomicUsize::new(0));
    let hold = Arc::new(Hold::default());
    let event_loop = Loop::new();
    // Enough held jobs to occupy every worker (libuv's default pool has 4;
    // `UV_THREADPOOL_SIZE` may make it larger, up to 1024).
    let workers: u64 = std::env::var("UV_THREADPOOL_SIZE")
        .ok()
        .and_then(|size| size.parse().ok())
        .unwrap_or(4);
    for input in 0..workers {
        event_loop.queue(job(input, Some(&hold), &reports, &drops));
    }
    let waiting: Vec<*mut uv_work_t> = (100..108)
        .map(|input| event_loop.queue(job(input, None, &reports, &drops)))
        .collect();
    let cancelled = waiting
        .iter()
        // SAFETY: a queued request whose completion has not run (the loop
        // is not running).
        .filter(|&&req| unsafe { uv_cancel(req) } == 0)
        .count();
    *hold.released.lock().unwrap() = true;
    hold.wake.notify_all();
    event_loop.run();
    drop(event_loop);

    assert_eq!(drops.load(Ordering::Relaxed) as u64, workers + 8);
    let reports = reports.lock().unwrap();
    let cancelled_reports: Vec<&Report> = reports
        .iter()
        .filter(|r| r.status == UV_ECANCELED)
        .collect();
    assert_eq!(cancelled_reports.len(), cancelled);
    assert!(
        cancelled >= 1,
        "no request could be cancelled while the pool was busy"
    );
    assert!(
        cancelled_reports
            .iter()
            .all(|r| r.worker.is_none() && r.output.is_none())
    );
}
