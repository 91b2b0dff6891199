//! Rust functions, a collation and a row callback for SQLite, used from 4
//! threads with a connection each.
//!
//! ```text
//! cargo run --release --example sqlite
//! ```
//!
//! Needs SQLite's library (Debian: `apt-get install libsqlite3-dev`). To
//! reuse it, copy this file: the `extern` block declares the few SQLite
//! functions it calls. (The `cfg(callgate_sqlite)` lines are for this
//! repository's build, which leaves SQLite out where `pkg-config` does not
//! find it; a copy drops them and keeps `#[link(name = "sqlite3")]`.)
//!
//! 1. `word_score(text)` is a `#[c_callback(local)]` SQL function whose
//!    per-connection state lives in SQLite's `pApp` as a `callgate::UserData`,
//!    reached with `#[user_data(from = sqlite3_user_data(ctx))]`; SQLite
//!    frees it with `UserData::<Scores>::destroy` (`xDestroy`) when the
//!    connection closes — or when registration fails, so there is nothing
//!    left for Rust to free twice.
//! 2. A panic or an `Err` in an SQL function becomes an SQL error: the
//!    fallback expression `report(ctx)` uses the callback's C-level
//!    parameter `ctx` and passes the last error to `sqlite3_result_error`.
//! 3. The `by_length` collation is a `callgate::Closure` SQLite owns:
//!    function, data and `free` (its `xDestroy`).
//! 4. `sqlite3_exec`'s row callback is a `Closure` Rust keeps for the call.

#![cfg_attr(not(callgate_sqlite), allow(dead_code, unused_imports))]

use std::ffi::{CStr, CString, c_char, c_int, c_uchar, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use callgate::{Closure, UserData, c_callback};

#[allow(non_camel_case_types)]
#[repr(C)]
struct sqlite3 {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
struct sqlite3_context {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
struct sqlite3_value {
    _opaque: [u8; 0],
}

type XFunc = unsafe extern "C" fn(*mut sqlite3_context, c_int, *mut *mut sqlite3_value);
type XCompare =
    unsafe extern "C" fn(*mut c_void, c_int, *const c_void, c_int, *const c_void) -> c_int;
type ExecRow =
    unsafe extern "C" fn(*mut c_void, c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;
type Destroy = unsafe extern "C" fn(*mut c_void);

#[cfg_attr(callgate_sqlite, link(name = "sqlite3"))]
unsafe extern "C" {
    fn sqlite3_open(filename: *const c_char, db: *mut *mut sqlite3) -> c_int;
    fn sqlite3_close(db: *mut sqlite3) -> c_int;
    fn sqlite3_create_function_v2(
        db: *mut sqlite3,
        name: *const c_char,
        n_arg: c_int,
        text_rep: c_int,
        app: *mut c_void,
        x_func: Option<XFunc>,
        x_step: Option<XFunc>,
        x_final: Option<unsafe extern "C" fn(*mut sqlite3_context)>,
        x_destroy: Option<Destroy>,
    ) -> c_int;
    fn sqlite3_create_collation_v2(
        db: *mut sqlite3,
        name: *const c_char,
        text_rep: c_int,
        arg: *mut c_void,
        compare: Option<XCompare>,
        destroy: Option<Destroy>,
    ) -> c_int;
    fn sqlite3_exec(
        db: *mut sqlite3,
        sql: *const c_char,
        callback: Option<ExecRow>,
        arg: *mut c_void,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    fn sqlite3_free(pointer: *mut c_void);
    fn sqlite3_user_data(ctx: *mut sqlite3_context) -> *mut c_void;
    fn sqlite3_result_int64(ctx: *mut sqlite3_context, value: i64);
    fn sqlite3_result_error(ctx: *mut sqlite3_context, message: *const c_char, len: c_int);
    fn sqlite3_value_text(value: *mut sqlite3_value) -> *const c_uchar;
}

const SQLITE_OK: c_int = 0;
const SQLITE_UTF8: c_int = 1;

/// A connection's state: how many words it scored. SQLite owns it.
struct Scores {
    scored: u64,
    /// Shared by every connection.
    totals: Arc<Totals>,
}

#[derive(Default)]
struct Totals {
    /// Words scored by every connection.
    scored: AtomicU64,
    /// Connection states SQLite dropped.
    dropped: AtomicU64,
}

impl Drop for Scores {
    fn drop(&mut self) {
        self.totals.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// The fallback of the SQL functions: `ctx` is the C-level parameter (a
/// raw pointer), and the failure's message is already the thread's last
/// error, so it becomes the SQL error.
fn report(ctx: *mut sqlite3_context) {
    let message = callgate::last_error().unwrap_or_default();
    let message = CString::new(message).unwrap_or_default();
    // SAFETY: the context SQLite passed to the failed call; SQLite copies
    // the message.
    unsafe { sqlite3_result_error(ctx, message.as_ptr(), -1) };
}

/// `word_score(text)`: the sum of the letters' positions in the alphabet;
/// an error for anything but ASCII letters, a panic for "panic".
#[c_callback(local, on_error = report(ctx))]
fn word_score(
    ctx: *mut sqlite3_context,
    argc: c_int,
    #[len = argc] args: &[*mut sqlite3_value],
    // SAFETY: `pApp` is this connection's `UserData<Scores>`; SQLite calls a
    // connection's functions one at a time.
    #[user_data(from = unsafe { sqlite3_user_data(ctx) })] scores: &mut Scores,
) -> Result<(), String> {
    // SAFETY: the one argument SQLite passed; NULL for SQL NULL.
    let text = unsafe { sqlite3_value_text(args[0]) };
    if text.is_null() {
        return Err("word_score(NULL)".to_owned());
    }
    // SAFETY: SQLite's text values are NUL-terminated.
    let word = unsafe { CStr::from_ptr(text.cast()) }.to_string_lossy();
    if word == "panic" {
        panic!("asked to panic");
    }
    let mut score = 0_i64;
    for letter in word.chars() {
        if !letter.is_ascii_alphabetic() {
            return Err(format!("word_score({word:?}): {letter:?} is not a letter"));
        }
        score += i64::from(letter.to_ascii_lowercase() as u8 - b'a' + 1);
    }
    scores.scored += 1;
    scores.totals.scored.fetch_add(1, Ordering::Relaxed);
    // SAFETY: as above.
    unsafe { sqlite3_result_int64(ctx, score) };
    Ok(())
}

/// Runs `sql` and returns its rows (each as its columns' text), or the
/// SQL error. The row callback is a `Closure` kept for the call.
fn rows(db: *mut sqlite3, sql: &str) -> Result<Vec<Vec<String>>, String> {
    let found = Arc::new(std::sync::Mutex::new(Vec::new()));
    let collect = Arc::clone(&found);
    let row = Closure::new(
        1,
        move |columns: c_int, values: *mut *mut c_char, _names: *mut *mut c_char| -> c_int {
            let row = (0..columns as usize)
                .map(|column| {
                    // SAFETY: SQLite passes `columns` values, NULL or text.
                    let value = unsafe { *values.add(column) };
                    if value.is_null() {
                        "NULL".to_owned()
                    } else {
                        // SAFETY: as above.
                        unsafe { CStr::from_ptr(value) }
                            .to_string_lossy()
                            .into_owned()
                    }
                })
                .collect();
            collect.lock().unwrap().push(row);
            0
        },
    );
    let sql = CString::new(sql).map_err(|error| error.to_string())?;
    let mut message = std::ptr::null_mut();
    // SAFETY: an open connection; the closure outlives the call.
    let rc = unsafe {
        sqlite3_exec(
            db,
            sql.as_ptr(),
            Some(row.data_first()),
            row.data(),
            &mut message,
        )
    };
    if rc != SQLITE_OK {
        // SAFETY: SQLite's message, freed once.
        let text = unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned();
        // SAFETY: as above.
        unsafe { sqlite3_free(message.cast()) };
        return Err(text);
    }
    drop(row);
    let rows = std::mem::take(&mut *found.lock().unwrap());
    Ok(rows)
}

/// Registers `word_score` with a fresh state and `by_length`.
fn register(db: *mut sqlite3, totals: &Arc<Totals>) -> Result<(), c_int> {
    let state = UserData::new(Scores {
        scored: 0,
        totals: Arc::clone(totals),
    })
    .into_raw();
    // SAFETY: an open connection. SQLite owns `state` from here and calls
    // `destroy` on it once — when the connection closes, or at once if this
    // call fails — so there is nothing to free on failure.
    let rc = unsafe {
        sqlite3_create_function_v2(
            db,
            c"word_score".as_ptr(),
            1,
            SQLITE_UTF8,
            state,
            Some(word_score),
            None,
            None,
            Some(UserData::<Scores>::destroy),
        )
    };
    if rc != SQLITE_OK {
        return Err(rc);
    }

    let by_length = Closure::new(
        0,
        |a_len: c_int, a: *const c_void, b_len: c_int, b: *const c_void| -> c_int {
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
    // SAFETY: the closure's parts belong together; SQLite frees it with
    // `free` when the connection closes.
    let rc = unsafe {
        sqlite3_create_collation_v2(
            db,
            c"by_length".as_ptr(),
            SQLITE_UTF8,
            by_length.data,
            Some(by_length.data_first),
            Some(by_length.free),
        )
    };
    if rc != SQLITE_OK {
        // The one SQLite interface that does not call `xDestroy` when it
        // fails: the closure is still ours to free, once.
        // SAFETY: SQLite did not keep it.
        unsafe { (by_length.free)(by_length.data) };
        return Err(rc);
    }
    Ok(())
}

/// What each connection runs.
const QUERIES: [&str; 4] = [
    "SELECT column1, word_score(column1) FROM (VALUES ('rust'), ('c'), ('gate')) ORDER BY column1 COLLATE by_length",
    "SELECT word_score('callback'), word_score('boundary')",
    "SELECT word_score('two words')",
    "SELECT word_score('panic')",
];

#[cfg(callgate_sqlite)]
fn main() {
    // Panics become SQL errors; keep the default hook's report of each off
    // the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    println!("callgate sqlite example: Rust functions for SQLite, 4 threads, a connection each");
    let totals = Arc::new(Totals::default());
    let outputs: Vec<Vec<String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|connection| {
                let totals = &totals;
                scope.spawn(move || {
                    let mut db = std::ptr::null_mut();
                    // SAFETY: a valid out-pointer.
                    let rc = unsafe { sqlite3_open(c":memory:".as_ptr(), &mut db) };
                    assert_eq!(rc, SQLITE_OK, "sqlite3_open");
                    register(db, totals).expect("registration");
                    let mut lines = vec![format!("connection {connection}:")];
                    for sql in QUERIES {
                        let result = match rows(db, sql) {
                            Ok(rows) => rows
                                .iter()
                                .map(|row| row.join(" | "))
                                .collect::<Vec<_>>()
                                .join(", "),
                            Err(error) => format!("SQL error: {error}"),
                        };
                        lines.push(format!("   {sql}\n      {result}"));
                    }
                    // SAFETY: open; closing runs `xDestroy` for the state
                    // and the collation closure.
                    unsafe { sqlite3_close(db) };
                    lines
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| thread.join().expect("a connection's thread"))
            .collect()
    });
    // Every connection printed the same; show the first in full.
    println!();
    for line in &outputs[0] {
        println!("{line}");
    }
    let same = outputs.iter().all(|lines| lines[1..] == outputs[0][1..]);
    println!(
        "connections 1-3: {}",
        if same {
            "the same results"
        } else {
            "DIFFERENT results"
        }
    );
    let stats = callgate::stats();
    println!();
    println!("words scored: {}", totals.scored.load(Ordering::Relaxed));
    println!(
        "connection states dropped by SQLite: {}",
        totals.dropped.load(Ordering::Relaxed)
    );
    println!(
        "callgate::stats(): {} panics caught, {} errors returned",
        stats.panics_caught, stats.errors_returned
    );
    assert!(same, "the connections disagree");
    assert_eq!(
        totals.dropped.load(Ordering::Relaxed),
        4,
        "a state was not dropped once"
    );
}

/// This repository's build without SQLite.
#[cfg(not(callgate_sqlite))]
fn main() {
    eprintln!("built without SQLite: install libsqlite3-dev and pkg-config");
}
