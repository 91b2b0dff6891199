//! The SQLite C API the tests call: the opaque `sqlite3*` types, the
//! functions and the `SQLITE_*` codes, and `Connection`, an in-memory
//! connection that runs SQL and closes on drop.

use std::ffi::{CStr, CString, c_char, c_int, c_uchar, c_void};

#[allow(non_camel_case_types)]
#[repr(C)]
pub(super) struct sqlite3 {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
struct sqlite3_stmt {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
pub(super) struct sqlite3_context {
    _opaque: [u8; 0],
}

#[allow(non_camel_case_types)]
#[repr(C)]
pub(super) struct sqlite3_value {
    _opaque: [u8; 0],
}

type XFunc = unsafe extern "C" fn(*mut sqlite3_context, c_int, *mut *mut sqlite3_value);
type XCompare =
    unsafe extern "C" fn(*mut c_void, c_int, *const c_void, c_int, *const c_void) -> c_int;
type ExecRow =
    unsafe extern "C" fn(*mut c_void, c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;
type Destroy = unsafe extern "C" fn(*mut c_void);

unsafe extern "C" {
    fn sqlite3_open(filename: *const c_char, db: *mut *mut sqlite3) -> c_int;
    fn sqlite3_close(db: *mut sqlite3) -> c_int;
    fn sqlite3_errmsg(db: *mut sqlite3) -> *const c_char;
    pub(super) fn sqlite3_create_function_v2(
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
    pub(super) fn sqlite3_create_collation_v2(
        db: *mut sqlite3,
        name: *const c_char,
        text_rep: c_int,
        arg: *mut c_void,
        compare: Option<XCompare>,
        destroy: Option<Destroy>,
    ) -> c_int;
    pub(super) fn sqlite3_exec(
        db: *mut sqlite3,
        sql: *const c_char,
        callback: Option<ExecRow>,
        arg: *mut c_void,
        errmsg: *mut *mut c_char,
    ) -> c_int;
    fn sqlite3_prepare_v2(
        db: *mut sqlite3,
        sql: *const c_char,
        n_byte: c_int,
        stmt: *mut *mut sqlite3_stmt,
        tail: *mut *const c_char,
    ) -> c_int;
    fn sqlite3_step(stmt: *mut sqlite3_stmt) -> c_int;
    fn sqlite3_column_int64(stmt: *mut sqlite3_stmt, column: c_int) -> i64;
    fn sqlite3_column_text(stmt: *mut sqlite3_stmt, column: c_int) -> *const c_uchar;
    fn sqlite3_finalize(stmt: *mut sqlite3_stmt) -> c_int;
    pub(super) fn sqlite3_free(pointer: *mut c_void);
    pub(super) fn sqlite3_user_data(ctx: *mut sqlite3_context) -> *mut c_void;
    pub(super) fn sqlite3_result_int64(ctx: *mut sqlite3_context, value: i64);
    pub(super) fn sqlite3_result_error(
        ctx: *mut sqlite3_context,
        message: *const c_char,
        len: c_int,
    );
    pub(super) fn sqlite3_value_int64(value: *mut sqlite3_value) -> i64;
}

pub(super) const SQLITE_OK: c_int = 0;
pub(super) const SQLITE_ABORT: c_int = 4;
pub(super) const SQLITE_MISUSE: c_int = 21;
const SQLITE_ROW: c_int = 100;
const SQLITE_DONE: c_int = 101;
pub(super) const SQLITE_UTF8: c_int = 1;

/// An open in-memory connection, closed on drop.
pub(super) struct Connection(pub(super) *mut sqlite3);

impl Connection {
    pub(super) fn open() -> Connection {
        let mut db = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let rc = unsafe { sqlite3_open(c":memory:".as_ptr(), &mut db) };
        assert_eq!(rc, SQLITE_OK);
        Connection(db)
    }

    fn error(&self) -> String {
        // SAFETY: an open connection; the message is a C string.
        unsafe { CStr::from_ptr(sqlite3_errmsg(self.0)) }
            .to_string_lossy()
            .into_owned()
    }

    /// The first column of every row, as integers, or the SQL error.
    pub(super) fn integers(&self, sql: &str) -> Result<Vec<i64>, String> {
        self.rows(sql, |stmt| {
            // SAFETY: a row is current.
            unsafe { sqlite3_column_int64(stmt, 0) }
        })
    }

    /// The first column of every row, as text.
    pub(super) fn texts(&self, sql: &str) -> Result<Vec<String>, String> {
        self.rows(sql, |stmt| {
            // SAFETY: a row is current; the text is NUL-terminated.
            let text = unsafe { sqlite3_column_text(stmt, 0) };
            // SAFETY: as above.
            unsafe { CStr::from_ptr(text.cast()) }
                .to_string_lossy()
                .into_owned()
        })
    }

    fn rows<T>(
        &self,
        sql: &str,
        mut column: impl FnMut(*mut sqlite3_stmt) -> T,
    ) -> Result<Vec<T>, String> {
        let sql = CString::new(sql).unwrap();
        let mut stmt = std::ptr::null_mut();
        // SAFETY: an open connection and a C string.
        let rc = unsafe {
            sqlite3_prepare_v2(self.0, sql.as_ptr(), -1, &mut stmt, std::ptr::null_mut())
        };
        if rc != SQLITE_OK {
            return Err(self.error());
        }
        let mut rows = Vec::new();
        let outcome = loop {
            // SAFETY: a prepared statement.
            match unsafe { sqlite3_step(stmt) } {
                SQLITE_ROW => rows.push(column(stmt)),
                SQLITE_DONE => break Ok(rows),
                _ => break Err(self.error()),
            }
        };
        // SAFETY: finalised once.
        unsafe { sqlite3_finalize(stmt) };
        outcome
    }

    pub(super) fn register(&self, name: &CStr, n_arg: c_int, function: XFunc) {
        // SAFETY: an open connection; no state.
        let rc = unsafe {
            sqlite3_create_function_v2(
                self.0,
                name.as_ptr(),
                n_arg,
                SQLITE_UTF8,
                std::ptr::null_mut(),
                Some(function),
                None,
                None,
                None,
            )
        };
        assert_eq!(rc, SQLITE_OK);
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // SAFETY: open, every statement finalised; closing runs the
        // functions' and collations' destroy callbacks.
        let rc = unsafe { sqlite3_close(self.0) };
        assert_eq!(rc, SQLITE_OK);
    }
}
