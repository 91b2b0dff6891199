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

    /// The address the library's first byte is loaded at, the base its
    /// ELF addresses are relative to.
    pub fn base(&self) -> Result<*const u8, String> {
        let mut map: *mut libc::c_void = core::ptr::null_mut();
        // SAFETY: `handle` is live; RTLD_DI_LINKMAP writes one pointer to
        // `map`.
        let rc = unsafe {
            libc::dlinfo(
                self.handle,
                libc::RTLD_DI_LINKMAP,
                (&raw mut map).cast::<c_void>(),
            )
        };
        if rc != 0 || map.is_null() {
            return Err(format!("dlinfo: {}", dl_error()));
        }
        // SAFETY: `map` points to the library's `struct link_map`, whose
        // first field is `l_addr`, the load address, and which lives as
        // long as the library.
        Ok(unsafe { map.cast::<usize>().read() } as *const u8)
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
