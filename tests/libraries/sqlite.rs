//! SQLite calling Rust: application-defined functions registered with
//! `sqlite3_create_function_v2` (state through `pApp` as `UserData`, freed
//! by SQLite's `xDestroy`, which the functions reach with
//! `#[user_data(from = sqlite3_user_data(ctx))]` and their arguments as a
//! slice of `sqlite3_value *`; a function that panics and one that fails,
//! reported with `sqlite3_result_error` by their fallback expressions), a
//! function, a collation and an `sqlite3_exec` row callback as `Closure`s
//! (the function's found with `sqlite3_user_data`) — used from 4
//! threads, each with its own connection. Registration failures free the
//! state exactly once, by SQLite's rule for each function. With
//! `CALLGATE=panic=quiet`, a function's panic leaves standard error alone.
//!
//! The C API and `Connection` are declared in `ffi`.

mod ffi;

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::ThreadId;

use callgate::{Closure, UserData, c_callback};

use ffi::{
    Connection, SQLITE_ABORT, SQLITE_MISUSE, SQLITE_OK, SQLITE_UTF8, sqlite3, sqlite3_context,
    sqlite3_create_collation_v2, sqlite3_create_function_v2, sqlite3_exec, sqlite3_free,
    sqlite3_result_error, sqlite3_result_int64, sqlite3_user_data, sqlite3_value,
    sqlite3_value_int64,
};

/// A connection's running total, owned by SQLite through `pApp`.
struct Tally {
    sum: i64,
    calls: u64,
    drops: Arc<AtomicUsize>,
    /// Where `Drop` ran.
    dropped_on: Arc<std::sync::Mutex<Vec<ThreadId>>>,
}

impl Drop for Tally {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::Relaxed);
        self.dropped_on
            .lock()
            .unwrap()
            .push(std::thread::current().id());
    }
}

impl Tally {
    fn new(drops: &Arc<AtomicUsize>, dropped_on: &Arc<std::sync::Mutex<Vec<ThreadId>>>) -> Self {
        Tally {
            sum: 0,
            calls: 0,
            drops: Arc::clone(drops),
            dropped_on: Arc::clone(dropped_on),
        }
    }
}

/// The fallback of the functions below: the failure's message, which is
/// the thread's last error by the time the fallback runs, becomes the SQL
/// error. `ctx` is the C-level parameter, a raw pointer.
fn report_error(ctx: *mut sqlite3_context) {
    report_error_text(ctx, &callgate::last_error().unwrap_or_default());
}

/// Makes `message` the result of the call `ctx` is the context of.
fn report_error_text(ctx: *mut sqlite3_context, message: &str) {
    let message = CString::new(message).unwrap_or_default();
    // SAFETY: SQLite passed `ctx` to the function this is the fallback of;
    // SQLite copies the message (length -1: up to the NUL).
    unsafe { sqlite3_result_error(ctx, message.as_ptr(), -1) };
}

/// `tally(x)`: adds `x` to the connection's total and returns the total.
/// SQLite's `xFunc` has no `void *` parameter: the state registered as
/// `pApp` (a `UserData<Tally>`; SQLite calls a connection's functions one at
/// a time) is `sqlite3_user_data(ctx)`. The arguments arrive as a slice of
/// `argc` values, which C passes as `sqlite3_value **`.
#[c_callback(local, on_error = report_error(ctx))]
fn tally(
    ctx: *mut sqlite3_context,
    argc: c_int,
    #[len = argc] args: &[*mut sqlite3_value],
    // SAFETY: SQLite passes the context of a function it called.
    #[user_data(from = unsafe { sqlite3_user_data(ctx) })] tally: &mut Tally,
) -> Result<(), String> {
    let [value] = args else {
        return Err(format!("tally() takes 1 argument, not {}", args.len()));
    };
    // SAFETY: a value SQLite passed for this call.
    tally.sum += unsafe { sqlite3_value_int64(*value) };
    tally.calls += 1;
    // SAFETY: as above.
    unsafe { sqlite3_result_int64(ctx, tally.sum) };
    Ok(())
}

/// `explode()`: panics. Its context parameter is a reference, so the
/// fallback expression sees the C-level `*mut sqlite3_context`.
#[c_callback(local, on_panic = report_error(ctx))]
fn explode(ctx: &mut sqlite3_context, _argc: c_int, _args: *mut *mut sqlite3_value) {
    let _ = ctx;
    panic!("explode() was called");
}

/// `checked_sqrt(x)`: the integer square root, an error for negative `x`.
#[c_callback(local, on_error = report_error(ctx))]
fn checked_sqrt(
    ctx: *mut sqlite3_context,
    argc: c_int,
    #[len = argc] args: &[*mut sqlite3_value],
) -> Result<(), String> {
    // SAFETY: a value SQLite passed for this call.
    let value = unsafe { sqlite3_value_int64(args[0]) };
    if value < 0 {
        return Err(format!("checked_sqrt({value}): negative"));
    }
    // SAFETY: as above.
    unsafe { sqlite3_result_int64(ctx, value.isqrt()) };
    Ok(())
}

/// The data of an `xFunc` `Closure`: the `pApp` SQLite gives back.
fn function_data(ctx: *mut sqlite3_context, _: c_int, _: *mut *mut sqlite3_value) -> *mut c_void {
    // SAFETY: SQLite passes the context of a function it called.
    unsafe { sqlite3_user_data(ctx) }
}

/// Registers `exploding`, a collation that panics, as a `Closure` made
/// inside a callback, as a loadable extension's init function makes its
/// functions.
#[c_callback(local, on_panic = SQLITE_MISUSE)]
fn register_exploding(db: *mut sqlite3) -> c_int {
    let compare = Closure::new(
        0,
        |_: c_int, _: *const c_void, _: c_int, _: *const c_void| -> c_int {
            panic!("exploding collation")
        },
    )
    .into_raw_parts();
    // SAFETY: a connection the caller opened; the closure's parts belong
    // together.
    let rc = unsafe {
        sqlite3_create_collation_v2(
            db,
            c"exploding".as_ptr(),
            SQLITE_UTF8,
            compare.data,
            Some(compare.data_first),
            Some(compare.free),
        )
    };
    if rc != SQLITE_OK {
        // SAFETY: SQLite did not keep it (see `register_by_length`).
        unsafe { (compare.free)(compare.data) };
    }
    rc
}

/// Registering this file's callbacks; the rest is in `ffi`.
impl Connection {
    /// Registers `tally` with a fresh `Tally`; SQLite owns it from here.
    fn register_tally(&self, n_arg: c_int, state: Tally) -> c_int {
        let state = UserData::new(state).into_raw();
        // SAFETY: an open connection; `state` and its destroy function
        // belong together, and SQLite calls `destroy` exactly once — also
        // when this call fails.
        unsafe {
            sqlite3_create_function_v2(
                self.0,
                c"tally".as_ptr(),
                n_arg,
                SQLITE_UTF8,
                state,
                Some(tally),
                None,
                None,
                Some(UserData::<Tally>::destroy),
            )
        }
    }

    /// Registers `scaled(x)`, `scale(x)`, as a `Closure` whose `xFunc`
    /// finds it with `sqlite3_user_data`; SQLite frees it with `xDestroy`.
    fn register_scaled(&self, scale: impl Fn(i64) -> i64 + Send + 'static) {
        let (scaled, x_func) = Closure::with_accessor(
            (),
            function_data,
            move |ctx: *mut sqlite3_context, argc: c_int, argv: *mut *mut sqlite3_value| {
                if argc != 1 {
                    report_error_text(ctx, &format!("scaled() takes 1 argument, not {argc}"));
                    return;
                }
                // SAFETY: the value SQLite passed for this call.
                let x = unsafe { sqlite3_value_int64(*argv) };
                // SAFETY: the context SQLite passed for this call.
                unsafe { sqlite3_result_int64(ctx, scale(x)) };
            },
        );
        let scaled = scaled.into_raw_parts();
        // SAFETY: an open connection; the closure's data, the function
        // that finds it and its `free` belong together, and SQLite calls
        // `free` exactly once — also when this call fails.
        let rc = unsafe {
            sqlite3_create_function_v2(
                self.0,
                c"scaled".as_ptr(),
                1,
                SQLITE_UTF8,
                scaled.data,
                Some(x_func),
                None,
                None,
                Some(scaled.free),
            )
        };
        assert_eq!(rc, SQLITE_OK);
    }
}

/// A collation ordering text by length, then bytes, as a `Closure` that
/// counts its calls; SQLite frees it with `xDestroy` (the closure's `free`).
fn register_by_length(db: &Connection, text_rep: c_int, calls: &Arc<AtomicUsize>) -> c_int {
    let calls = Arc::clone(calls);
    let compare = Closure::new(
        0,
        move |a_len: c_int, a: *const c_void, b_len: c_int, b: *const c_void| -> c_int {
            calls.fetch_add(1, Ordering::Relaxed);
            // SAFETY: SQLite passes each text with its length in bytes.
            let (a, b) = unsafe {
                (
                    std::slice::from_raw_parts(a.cast::<u8>(), a_len as usize),
                    std::slice::from_raw_parts(b.cast::<u8>(), b_len as usize),
                )
            };
            (a.len(), a).cmp(&(b.len(), b)) as c_int
        },
    )
    .into_raw_parts();
    // SAFETY: the closure's parts belong together.
    let rc = unsafe {
        sqlite3_create_collation_v2(
            db.0,
            c"by_length".as_ptr(),
            text_rep,
            compare.data,
            Some(compare.data_first),
            Some(compare.free),
        )
    };
    if rc != SQLITE_OK {
        // Unlike every other SQLite interface, a failed
        // `sqlite3_create_collation_v2` does not call `xDestroy`: the
        // closure is still ours to free, once.
        // SAFETY: SQLite did not keep it.
        unsafe { (compare.free)(compare.data) };
    }
    rc
}

const NUMBERS: &str =
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) ";

/// What one thread does with its own connection; returns the thread's
/// `sqlite3_exec` row count.
fn use_connection(
    index: usize,
    drops: &Arc<AtomicUsize>,
    dropped_on: &Arc<std::sync::Mutex<Vec<ThreadId>>>,
) -> usize {
    let db = Connection::open();
    assert_eq!(
        db.register_tally(1, Tally::new(drops, dropped_on)),
        SQLITE_OK
    );
    db.register(c"explode", 0, explode);
    db.register(c"checked_sqrt", 1, checked_sqrt);
    let factor = i64::try_from(index).unwrap() + 2;
    db.register_scaled(move |x| x * factor);
    let collation_calls = Arc::new(AtomicUsize::new(0));
    assert_eq!(
        register_by_length(&db, SQLITE_UTF8, &collation_calls),
        SQLITE_OK
    );

    // The pApp state adds up every row: 1 + 2 + … + 1000.
    let totals = db
        .integers(&format!("{NUMBERS} SELECT tally(i) FROM n"))
        .expect("tally() runs");
    assert_eq!(totals.last(), Some(&500_500), "thread {index}");
    assert_eq!(db.integers("SELECT tally(5)").unwrap(), [500_505]);
    assert_eq!(
        db.integers("SELECT tally(1, 2)"),
        Err("wrong number of arguments to function tally()".to_owned())
    );

    // A panic and an `Err` become SQL errors, with their messages; the
    // connection and the thread carry on.
    assert_eq!(
        db.integers("SELECT explode()"),
        Err("callback `explode` panicked: explode() was called".to_owned())
    );
    assert_eq!(
        db.integers("SELECT checked_sqrt(-4)"),
        Err("checked_sqrt(-4): negative".to_owned())
    );
    assert_eq!(db.integers("SELECT checked_sqrt(144)").unwrap(), [12]);
    assert_eq!(db.integers("SELECT scaled(21)").unwrap(), [21 * factor]);

    // The collation closure orders by length.
    let words = db
        .texts(
            "SELECT w FROM (SELECT 'ccc' AS w UNION ALL SELECT 'a' UNION ALL SELECT 'bb' \
             UNION ALL SELECT 'aa') ORDER BY w COLLATE by_length",
        )
        .unwrap();
    assert_eq!(words, ["a", "aa", "bb", "ccc"]);
    assert!(collation_calls.load(Ordering::Relaxed) > 0);

    // An `sqlite3_exec` row callback borrowed for the call: a `Closure`
    // that Rust keeps, and drops once `sqlite3_exec` has returned.
    let rows = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&rows);
    let row = Closure::new(
        1,
        move |columns: c_int,
              values: *mut *mut c_char,
              _names: *mut *mut c_char|
              -> Result<c_int, String> {
            if columns != 1 {
                return Err(format!("{columns} columns"));
            }
            // SAFETY: SQLite passes `columns` values, here one non-NULL text.
            let value = unsafe { CStr::from_ptr(*values) };
            value.to_str().map_err(|error| error.to_string())?;
            counted.fetch_add(1, Ordering::Relaxed);
            Ok(0)
        },
    );
    let sql = CString::new(format!("{NUMBERS} SELECT i FROM n")).unwrap();
    // SAFETY: the closure outlives the call.
    let rc = unsafe {
        sqlite3_exec(
            db.0,
            sql.as_ptr(),
            Some(row.data_first()),
            row.data(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, SQLITE_OK);
    drop(row);
    assert_eq!(Arc::strong_count(&rows), 1, "the row closure was dropped");
    let rows = rows.load(Ordering::Relaxed);
    assert_eq!(rows, 1000);
    rows
}

#[test]
fn functions_collations_and_exec_callbacks_from_four_threads() {
    crate::child::alone(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let dropped_on = Arc::new(std::sync::Mutex::new(Vec::new()));
        let before = callgate::stats();
        let workers: Vec<ThreadId> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|index| {
                    let (drops, dropped_on) = (&drops, &dropped_on);
                    scope.spawn(move || {
                        assert_eq!(use_connection(index, drops, dropped_on), 1000);
                        std::thread::current().id()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap())
                .collect()
        });
        // Each connection's state was dropped once, by `sqlite3_close` on the
        // thread that used it.
        assert_eq!(drops.load(Ordering::Relaxed), 4);
        let mut dropped_on = dropped_on.lock().unwrap().clone();
        let mut workers = workers;
        dropped_on.sort_by_key(|id| format!("{id:?}"));
        workers.sort_by_key(|id| format!("{id:?}"));
        assert_eq!(dropped_on, workers);
        let after = callgate::stats();
        assert!(after.panics_caught - before.panics_caught >= 4);
        assert!(after.errors_returned - before.errors_returned >= 4);
    });
}

/// `sqlite3_create_function_v2` destroys `pApp` itself when it fails: the
/// state is dropped once, and the caller has nothing left to free.
#[test]
fn a_failed_function_registration_drops_the_state_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    let dropped_on = Arc::new(std::sync::Mutex::new(Vec::new()));
    let db = Connection::open();
    // -2 arguments: SQLITE_MISUSE.
    assert_eq!(
        db.register_tally(-2, Tally::new(&drops, &dropped_on)),
        SQLITE_MISUSE
    );
    assert_eq!(drops.load(Ordering::Relaxed), 1);
    drop(db);
    assert_eq!(drops.load(Ordering::Relaxed), 1);
}

/// `sqlite3_create_collation_v2` does not call `xDestroy` when it fails:
/// the caller frees the closure, once.
#[test]
fn a_failed_collation_registration_leaves_the_closure_to_the_caller() {
    let db = Connection::open();
    let calls = Arc::new(AtomicUsize::new(0));
    // The closure holds a clone of `calls`: it is dropped when the count
    // falls back to one.
    assert_eq!(register_by_length(&db, 99, &calls), SQLITE_MISUSE);
    assert_eq!(Arc::strong_count(&calls), 1);
    // And with a valid encoding SQLite keeps it until the connection closes.
    assert_eq!(register_by_length(&db, SQLITE_UTF8, &calls), SQLITE_OK);
    assert_eq!(Arc::strong_count(&calls), 2);
    drop(db);
    assert_eq!(Arc::strong_count(&calls), 1);
}

/// A row callback that fails aborts `sqlite3_exec`, and its message is
/// the thread's last error.
#[test]
fn a_failing_exec_callback_aborts_the_statement() {
    let db = Connection::open();
    let row = Closure::new(
        1,
        |_columns: c_int, _values: *mut *mut c_char, _names: *mut *mut c_char| -> c_int {
            panic!("no rows wanted")
        },
    );
    let mut message = std::ptr::null_mut();
    // SAFETY: the closure outlives the call; SQLite allocates `message`.
    let rc = unsafe {
        sqlite3_exec(
            db.0,
            c"SELECT 1".as_ptr(),
            Some(row.data_first()),
            row.data(),
            &mut message,
        )
    };
    assert_eq!(rc, SQLITE_ABORT);
    assert!(
        callgate::last_error()
            .unwrap()
            .ends_with("panicked: no rows wanted")
    );
    // SAFETY: SQLite allocated it.
    unsafe { sqlite3_free(message.cast()) };
}

/// A closure made inside a callback is named after that callback in its
/// panic message, as the user wrote it.
#[test]
fn a_closure_made_in_a_callback_is_named_after_it() {
    let db = Connection::open();
    assert_eq!(register_exploding(db.0), SQLITE_OK);
    let words = db
        .texts("SELECT w FROM (SELECT 'b' AS w UNION ALL SELECT 'a') ORDER BY w COLLATE exploding");
    // Every comparison panicked and returned the fallback, 0: equal.
    assert_eq!(words.map(|words| words.len()), Ok(2));
    assert_eq!(
        callgate::last_error().as_deref(),
        Some(
            "callback `libraries::sqlite::register_exploding::{{closure}}` panicked: exploding \
             collation"
        )
    );
}

/// With `CALLGATE=panic=quiet` a function's panic reaches SQLite as its
/// error, and nothing of it reaches standard error; without it, Rust's
/// panic message does. The test runs its body in child processes, one per
/// setting, and reads their standard error.
#[test]
fn quiet_panics_leave_standard_error_alone() {
    let child_stderr = |setting: &str| {
        let output = crate::child::in_child(
            |command| {
                command
                    .env("CALLGATE", setting)
                    .env_remove("RUST_BACKTRACE");
            },
            || {
                let db = Connection::open();
                db.register(c"explode", 0, explode);
                assert_eq!(
                    db.integers("SELECT explode()"),
                    Err("callback `explode` panicked: explode() was called".to_owned())
                );
                eprintln!("the child is done");
            },
        )?;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(stderr.contains("the child is done"), "{stderr}");
        Some(stderr)
    };
    let Some(quiet) = child_stderr("panic=quiet") else {
        return;
    };
    assert!(!quiet.contains("explode() was called"), "{quiet}");
    let caught = child_stderr("panic=catch").expect("the child returned above");
    assert!(caught.contains("explode() was called"), "{caught}");
}
