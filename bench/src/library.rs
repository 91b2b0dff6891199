//! Shared libraries loaded with `dlopen` for good: the fixture's builds and
//! the Go library.

use core::ffi::{CStr, c_void};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A library loaded with `dlopen`, never unloaded: function pointers looked
/// up in it stay valid for the life of the process.
pub struct Library {
    handle: *mut c_void,
}

impl Library {
    /// Loads the library at `path` (`RTLD_NOW | RTLD_LOCAL`); the message
    /// of `dlerror` if that fails.
    pub fn open(path: &Path) -> Result<Library, String> {
        let c_path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| format!("{} contains a NUL byte", path.display()))?;
        // SAFETY: `c_path` is NUL-terminated. The libraries loaded here run
        // no load-time code that needs anything from this program.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(format!("dlopen {}: {}", path.display(), dl_error()));
        }
        Ok(Library { handle })
    }

    /// The address of the symbol `name`.
    pub fn symbol(&self, name: &CStr) -> Result<*mut c_void, String> {
        // SAFETY: `handle` is a live handle (never closed); `name` is
        // NUL-terminated.
        let address = unsafe { libc::dlsym(self.handle, name.as_ptr()) };
        if address.is_null() {
            return Err(format!("dlsym {name:?}: {}", dl_error()));
        }
        Ok(address)
    }
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
