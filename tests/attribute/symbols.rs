//! Exported symbol names: `export = "sym"` renames the C symbol, the default
//! is the fn's own name, and `local` exports nothing.
//!
//! The `dlsym` checks need the test binary to export its symbols dynamically
//! (`-rdynamic`, which the dev package's build script passes to test targets).

use core::ffi::{CStr, c_void};

use callgate::c_callback;
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn m_call_renamed_export(value: i32) -> i32;
}

#[c_callback(export = "macros_renamed_export", on_panic = -1)]
pub fn renamed(value: i32) -> i32 {
    value * 3
}

#[c_callback(on_panic = -1)]
pub fn macros_default_export(value: i32) -> i32 {
    value + 1
}

#[c_callback(local, on_panic = -1)]
pub fn macros_local_callback(value: i32) -> i32 {
    value
}

fn lookup(symbol: &CStr) -> *mut c_void {
    // SAFETY: a NUL-terminated name; RTLD_DEFAULT searches the executable
    // and everything it loaded.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, symbol.as_ptr()) }
}

#[test]
fn c_links_against_the_exported_name() {
    // SAFETY: a plain C function.
    assert_eq!(unsafe { m_call_renamed_export(5) }, 15);
}

#[test]
fn dlsym_finds_exports_by_their_symbol_names() {
    let renamed = lookup(c"macros_renamed_export");
    assert!(
        !renamed.is_null(),
        "`export = \"macros_renamed_export\"` is not in the dynamic symbol table"
    );
    // SAFETY: the symbol is the trampoline above.
    let renamed =
        unsafe { core::mem::transmute::<*mut c_void, extern "C" fn(i32) -> i32>(renamed) };
    assert_eq!(renamed(4), 12);

    let default = lookup(c"macros_default_export");
    assert!(!default.is_null());
    // SAFETY: as above.
    let default =
        unsafe { core::mem::transmute::<*mut c_void, extern "C" fn(i32) -> i32>(default) };
    assert_eq!(default(4), 5);
}

#[test]
fn local_callbacks_and_renamed_fns_have_no_symbol_of_their_own_name() {
    assert!(lookup(c"renamed").is_null());
    assert!(lookup(c"macros_local_callback").is_null());
    assert_eq!(macros_local_callback(2), 2);
}
