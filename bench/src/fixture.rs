//! The benchmark callbacks in a `cdylib` loaded with `dlopen`: the hard
//! case, where a Rust `thread_local!` is general-dynamic TLS.

use core::ffi::{CStr, c_void};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Callbacks;
use crate::harness::{CstrFn, IntFn};

/// The fixture package (`fixture/`) and the file cargo builds from it.
const PACKAGE: &str = "callgate-bench-fixture";
const FILE: &str = "libcallgate_bench_fixture.so";

/// Where the fixture library is: `$CALLGATE_BENCH_FIXTURE` if set, else
/// built with cargo (same profile as this binary) into this binary's
/// target directory.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CALLGATE_BENCH_FIXTURE") {
        return Ok(path.into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let profile_dir = exe.parent().ok_or("this program has no directory")?;
    let target_dir = profile_dir.parent().ok_or("no target directory")?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--package", PACKAGE, "--target-dir"])
        .arg(target_dir);
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let status = build
        .status()
        .map_err(|e| format!("cannot run cargo to build {PACKAGE}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building {PACKAGE} failed ({status}); to load an existing build, set \
             CALLGATE_BENCH_FIXTURE=<path to {FILE}>"
        ));
    }
    Ok(profile_dir.join(FILE))
}

/// Where glibc put a loaded library's TLS block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsPlace {
    /// In the static TLS reserve: allocated with every thread.
    Static,
    /// In dynamic TLS: allocated for a thread on its first access.
    Dynamic,
}

/// Loads the library at `path` with `dlopen` (it stays loaded) and looks up
/// its callbacks; also says where the library's TLS block went: a block in static
/// TLS exists for the calling thread as soon as the library is loaded; a
/// dynamic one only after the thread's first access, which no code of the
/// library made on this thread yet.
pub fn load_placed(path: &Path) -> Result<(Callbacks, TlsPlace), String> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| format!("{} contains a NUL byte", path.display()))?;
    // SAFETY: `c_path` is NUL-terminated. The library runs no code at load
    // time that needs anything from us.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(format!("dlopen {}: {}", path.display(), dl_error()));
    }
    let symbol = |name: &CStr| -> Result<*mut c_void, String> {
        // SAFETY: `handle` is a live handle (never closed); `name` is
        // NUL-terminated.
        let address = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if address.is_null() {
            return Err(format!("dlsym {name:?}: {}", dl_error()));
        }
        Ok(address)
    };
    let int_fn = |name: &CStr| -> Result<IntFn, String> {
        let address = symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(i32) -> i32`, and the library is never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, IntFn>(address) })
    };
    let cstr_fn = |name: &CStr| -> Result<CstrFn, String> {
        let address = symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(*const c_char, i32) -> i32`, and the library is
        // never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, CstrFn>(address) })
    };
    let mut block: *mut c_void = core::ptr::null_mut();
    // SAFETY: `handle` is live; RTLD_DI_TLS_DATA writes one pointer.
    let rc = unsafe {
        libc::dlinfo(
            handle,
            libc::RTLD_DI_TLS_DATA,
            (&raw mut block).cast::<c_void>(),
        )
    };
    if rc != 0 {
        return Err(format!("dlinfo {}: {}", path.display(), dl_error()));
    }
    let place = if block.is_null() {
        TlsPlace::Dynamic
    } else {
        TlsPlace::Static
    };
    let callbacks = Callbacks {
        raw: int_fn(c"bench_raw")?,
        raw_cstr: cstr_fn(c"bench_raw_cstr")?,
        bound: int_fn(c"bench_bound")?,
        per_call: int_fn(c"bench_per_call")?,
        local: int_fn(c"bench_local")?,
        cstr: cstr_fn(c"bench_cstr")?,
    };
    Ok((callbacks, place))
}

/// Loads copies of the library at `path` (distinct files in a temporary
/// directory, so glibc loads each one) until one lands in dynamic TLS, the
/// case of a plugin loaded after the static TLS reserve filled up; the
/// earlier copies stay loaded. Returns its callbacks and how many copies
/// were loaded in all.
pub fn load_in_dynamic_tls(path: &Path) -> Result<(Callbacks, usize), String> {
    const MAX_COPIES: usize = 64;
    let dir = std::env::temp_dir().join(format!("callgate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let outcome = (|| {
        for copy in 1..=MAX_COPIES {
            let copy_path = dir.join(format!("copy_{copy:02}.so"));
            std::fs::copy(path, &copy_path)
                .map_err(|e| format!("copy {} to {}: {e}", path.display(), copy_path.display()))?;
            if let (callbacks, TlsPlace::Dynamic) = load_placed(&copy_path)? {
                return Ok((callbacks, copy));
            }
        }
        Err(format!(
            "{MAX_COPIES} copies of {} all got static TLS",
            path.display()
        ))
    })();
    // The loaded copies stay mapped after their files are gone.
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn dl_error() -> String {
    // SAFETY: `dlerror` returns null or a NUL-terminated message that stays
    // valid until the next dl* call on this thread; we copy it at once.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return "unknown error".to_owned();
    }
    // SAFETY: non-null, NUL-terminated (see above).
    unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}
