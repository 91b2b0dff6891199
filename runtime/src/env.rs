//! Rewriting the process environment while keeping callgate's settings in sync.
//!
//! callgate reads its [settings](crate::settings()) from the `CALLGATE`
//! variable once and caches them. A program that changes `CALLGATE` through
//! [`set_var`] or [`remove_var`] here, or empties its environment with
//! [`clear`], has the cached settings follow; changes made any other way
//! (`std::env::set_var`, C `setenv`) after the first read are not seen.
//!
//! [`clear`] exists because the obvious loop is quadratic: every
//! `unsetenv(3)` scans the whole environment. Where the C library has
//! `clearenv(3)` (glibc, musl) the environment is emptied in one call;
//! elsewhere the variables are removed one by one.
//!
//! # Safety
//!
//! All three functions are `unsafe` for the reason `std::env::set_var` is: on
//! most platforms the C library's environment is not thread-safe, so nothing
//! else may read or write it while they run. [`clear`] asks for more than
//! `std::env::set_var` does, because `clearenv(3)` does not take the lock the
//! `std::env` functions share: even reads through `std::env` must not run
//! concurrently with it.

use std::ffi::OsStr;
use std::sync::Mutex;

use crate::settings::{self, VAR};
use crate::sync::lock;

/// Serialises writes of `CALLGATE` through this module with the settings
/// update that follows, so the cache cannot keep the value that lost in
/// the environment. A child forked meanwhile could deadlock on it only by
/// writing the environment before `exec`, which POSIX rules out anyway.
static SETTINGS_WRITE: Mutex<()> = Mutex::new(());

/// Removes every variable from the process environment and returns
/// callgate's settings to their defaults, as `CALLGATE` is now unset.
///
/// On Linux with glibc or musl this is one `clearenv(3)` call, whatever the
/// size of the environment. Elsewhere the variables are removed one by one
/// with [`std::env::remove_var`]; names it cannot remove (empty, or
/// containing `=`, as malformed C environment entries and the hidden
/// per-drive variables of Windows are) are left in place.
///
/// Windows has no `clearenv`: there each removal is one
/// `SetEnvironmentVariableW(name, NULL)` (what `std::env::remove_var`
/// calls), and the per-drive current directories (`=C:`) stay, as they do
/// for `cmd`'s `set`. The C runtime's own copy of the environment (`getenv`
/// of the CRT, `_environ`) is not touched by either, as with any
/// `std::env` write on Windows.
///
/// ```no_run
/// use std::process::Command;
///
/// // SAFETY: no other thread is running yet.
/// unsafe {
///     callgate::env::clear();
///     callgate::env::set_var("PATH", "/usr/bin:/bin");
/// }
/// let status = Command::new("plugin-host").status()?;
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Safety
///
/// No other thread may read or write the environment while this runs: not
/// through `std::env` (including its reads, which `std::env::set_var` would
/// be safe against: `clearenv(3)` bypasses the lock they take), not through
/// C (`getenv`, `setenv`, `putenv`, `environ`), and not through code that
/// does so internally — among it a thread's first callback into callgate,
/// which reads `CALLGATE` unless the settings are already cached (calling
/// [`settings()`](crate::settings()) beforehand caches them). A program that
/// has not started any other thread meets this.
///
/// Pointers previously obtained from C `getenv` or `environ` may dangle
/// afterwards, as with `unsetenv(3)`.
pub unsafe fn clear() {
    // SAFETY: the caller guarantees that nothing else touches the
    // environment while we run.
    unsafe { imp::clear() };
    // Without asking whether `CALLGATE` was set: that would scan the
    // environment `clearenv` empties without looking at it, and the
    // defaults are right either way.
    settings::reset_to_default();
}

/// Sets the environment variable `key` to `value`, like
/// [`std::env::set_var`]; when `key` is `CALLGATE`, the new value becomes the
/// settings in force for later binds and calls (malformed parts are ignored,
/// and the first malformed value of the process is reported on standard
/// error).
///
/// # Panics
///
/// Like [`std::env::set_var`], if `key` is empty, contains `=` or NUL, or
/// `value` contains NUL; the settings are then unchanged.
///
/// # Safety
///
/// The contract of [`std::env::set_var`]: no other thread may read or write
/// the environment except through the functions of `std::env` (which share
/// a lock with this one), so not through C `getenv`, `setenv` or `environ`.
/// A program that has not started any other thread meets this.
pub unsafe fn set_var<K: AsRef<OsStr>, V: AsRef<OsStr>>(key: K, value: V) {
    let (key, value) = (key.as_ref(), value.as_ref());
    if !names_settings(key) {
        // SAFETY: the caller upholds `std::env::set_var`'s contract.
        unsafe { std::env::set_var(key, value) };
        return;
    }
    let _guard = lock(&SETTINGS_WRITE);
    // SAFETY: the caller upholds `std::env::set_var`'s contract.
    unsafe { std::env::set_var(key, value) };
    settings::reload(Some(value));
    crate::boundary::quiet_panics_if_asked();
}

/// Removes the environment variable `key`, like [`std::env::remove_var`];
/// when `key` is `CALLGATE`, the settings return to their defaults for later
/// binds and calls.
///
/// # Panics
///
/// Like [`std::env::remove_var`], if `key` is empty or contains `=` or NUL;
/// the settings are then unchanged.
///
/// # Safety
///
/// The contract of [`std::env::remove_var`], the same as [`set_var`]'s: no
/// other thread may read or write the environment except through the
/// functions of `std::env`. A program that has not started any other thread
/// meets this.
pub unsafe fn remove_var<K: AsRef<OsStr>>(key: K) {
    let key = key.as_ref();
    if !names_settings(key) {
        // SAFETY: the caller upholds `std::env::remove_var`'s contract.
        unsafe { std::env::remove_var(key) };
        return;
    }
    let _guard = lock(&SETTINGS_WRITE);
    // SAFETY: the caller upholds `std::env::remove_var`'s contract.
    unsafe { std::env::remove_var(key) };
    settings::reload(None);
}

/// True if `key` names the settings variable; Windows compares variable
/// names without regard to ASCII case, as the system does.
fn names_settings(key: &OsStr) -> bool {
    if cfg!(windows) {
        key.eq_ignore_ascii_case(VAR)
    } else {
        key == VAR
    }
}

#[cfg(all(target_os = "linux", any(target_env = "gnu", target_env = "musl")))]
mod imp {
    /// Empties the environment with one `clearenv(3)`.
    ///
    /// # Safety
    ///
    /// Nothing else reads or writes the environment meanwhile.
    pub(super) unsafe fn clear() {
        // SAFETY: the caller guarantees that nothing else reads or writes
        // the environment, which `clearenv` does without std's lock.
        let rc = unsafe { libc::clearenv() };
        // glibc's and musl's cannot fail.
        debug_assert_eq!(rc, 0);
    }
}

#[cfg(not(all(target_os = "linux", any(target_env = "gnu", target_env = "musl"))))]
mod imp {
    /// Removes the variables one by one.
    ///
    /// # Safety
    ///
    /// Nothing else reads or writes the environment meanwhile.
    pub(super) unsafe fn clear() {
        // `vars_os` takes a snapshot, so removing while iterating is fine.
        for (key, _) in std::env::vars_os() {
            // `remove_var` panics on these; C cannot remove them either.
            if key.is_empty() || key.as_encoded_bytes().contains(&b'=') {
                continue;
            }
            // SAFETY: the caller guarantees that nothing else reads or
            // writes the environment.
            unsafe { std::env::remove_var(&key) };
        }
    }
}

#[cfg(all(test, windows))]
mod tests {
    /// Runs under wine in `scripts/windows.sh`. The test binary's
    /// environment is emptied for good: no other unit test reads it.
    #[test]
    fn clear_leaves_only_the_per_drive_directories() {
        // SAFETY: Windows serialises environment access in the system (the
        // PEB lock), and no other test of this binary writes it.
        unsafe {
            super::set_var("CALLGATE_CLEAR_TEST", "1");
            super::set_var("PATH_CLEAR_TEST", "C:\\");
            super::clear();
        }
        let left: Vec<_> = std::env::vars_os()
            .map(|(key, _)| key)
            .filter(|key| !key.as_encoded_bytes().starts_with(b"="))
            .collect();
        assert!(left.is_empty(), "left after clear: {left:?}");
        assert_eq!(crate::settings::current(), crate::Settings::default());
    }
}
