//! `callgate::env`: emptying and rewriting the environment keeps the
//! settings in sync.
//!
//! Every test here rewrites the environment, so each runs its body in a
//! child process of its own (`crate::child`), where nothing else can read
//! the environment at the same time, and where the child's standard error
//! can be inspected.

use std::ffi::OsStr;
use std::process::Output;

use callgate::__private::{self as cg, Attach, GatePolicy, Site};
use callgate::{AttachMode, PanicMode, Settings};
use callgate_dev::site;

/// How the runtime's warning about a malformed `CALLGATE` starts.
const WARNING: &str = "callgate: ignoring malformed parts of CALLGATE";

/// Runs `body` in a child process with `CALLGATE` set to `callgate` (or
/// unset), and returns the child's output (`None` in the child).
fn in_child(callgate: Option<&str>, body: fn()) -> Option<Output> {
    crate::child::in_child(
        |command| {
            match callgate {
                Some(value) => command.env("CALLGATE", value),
                None => command.env_remove("CALLGATE"),
            };
        },
        body,
    )
}

/// Returns the id of the context the call runs on, or -3 if none.
unsafe extern "C" fn context_id() -> i32 {
    static SITE: Site = site("context_id", Attach::Bound, GatePolicy::Wait);
    cg::call(
        &SITE,
        || -1,
        || -2,
        |_| cg::ok(cg::current_context_id().map_or(-3, |id| id as i32)),
    )
}

/// Calls `context_id` as C would; returns what it saw, whether the thread
/// stayed attached afterwards, and how many binds it cost.
fn call_and_observe() -> (i32, bool, u64) {
    let binds = callgate::stats().binds;
    // SAFETY: `context_id` takes no arguments and has no preconditions.
    let seen = unsafe { context_id() };
    let attached_after = cg::current_context_id().is_some();
    (seen, attached_after, callgate::stats().binds - binds)
}

/// The number of entries in the C library's `environ`.
#[cfg(unix)]
fn c_environ_len() -> usize {
    use core::ffi::c_char;
    unsafe extern "C" {
        // C rewrites it (`clearenv` may set it to NULL), hence `mut`.
        static mut environ: *const *const c_char;
    }
    // SAFETY: the child is the only thread touching the environment; the
    // value is read through a raw pointer, never a reference.
    let mut entry = unsafe { (&raw const environ).read() };
    if entry.is_null() {
        return 0;
    }
    let mut len = 0;
    // SAFETY: `environ` is NULL-terminated, and nothing rewrites it while
    // we walk it.
    while !unsafe { entry.read() }.is_null() {
        len += 1;
        // SAFETY: the terminator has not been reached, so the next entry
        // is in bounds.
        entry = unsafe { entry.add(1) };
    }
    len
}

#[test]
fn clear_empties_the_environment() {
    in_child(None, || {
        for i in 0..4096 {
            // SAFETY: the child's test thread is the only one touching the
            // environment.
            unsafe { std::env::set_var(format!("CALLGATE_ENV_TEST_{i}"), "x") };
        }
        assert!(std::env::vars_os().count() >= 4096);
        #[cfg(unix)]
        assert!(c_environ_len() >= 4096);

        // SAFETY: as above.
        unsafe { callgate::env::clear() };
        let left: Vec<_> = std::env::vars_os().collect();
        assert!(left.is_empty(), "variables left after clear(): {left:?}");
        #[cfg(unix)]
        assert_eq!(c_environ_len(), 0);

        // The emptied environment still works.
        // SAFETY: as above.
        unsafe { callgate::env::set_var("AFTER_CLEAR", "yes") };
        assert_eq!(std::env::var("AFTER_CLEAR").as_deref(), Ok("yes"));
        #[cfg(unix)]
        assert_eq!(c_environ_len(), 1);
    });
}

#[test]
fn clear_returns_settings_to_defaults_and_callbacks_bind() {
    in_child(Some("attach=per_call"), || {
        assert_eq!(callgate::settings().attach, AttachMode::PerCall);
        let (seen, attached_after, binds) = call_and_observe();
        assert!(seen >= 0, "the call ran on no context: {seen}");
        assert!(!attached_after, "per_call: released when the call returned");
        assert_eq!(binds, 1);

        // SAFETY: the child's test thread is the only one touching the
        // environment.
        unsafe { callgate::env::clear() };
        assert_eq!(callgate::settings(), Settings::default());
        assert_eq!(std::env::var_os("CALLGATE"), None);

        let (seen, attached_after, binds) = call_and_observe();
        assert!(seen >= 0, "the call ran on no context: {seen}");
        assert!(attached_after, "bound: the thread keeps its context");
        assert_eq!(binds, 1);
        assert_eq!(cg::current_context_id(), Some(seen as u32));

        // Bound for good: the next call takes the fast path.
        let (again, _, binds) = call_and_observe();
        assert_eq!((again, binds), (seen, 0));
    });
}

#[test]
fn set_var_and_remove_var_update_settings() {
    in_child(None, || {
        assert_eq!(callgate::settings(), Settings::default());

        // SAFETY: the child's test thread is the only one touching the
        // environment.
        unsafe { callgate::env::set_var("CALLGATE", "attach=per_call") };
        assert_eq!(std::env::var("CALLGATE").as_deref(), Ok("attach=per_call"));
        assert_eq!(callgate::settings().attach, AttachMode::PerCall);
        let (seen, attached_after, binds) = call_and_observe();
        assert!(
            seen >= 0 && !attached_after && binds == 1,
            "{seen} {attached_after} {binds}"
        );

        // SAFETY: as above.
        unsafe { callgate::env::set_var("CALLGATE", "panic=abort") };
        let settings = callgate::settings();
        assert_eq!(
            (settings.attach, settings.panic),
            (AttachMode::Bound, PanicMode::Abort)
        );

        // Other variables leave the settings alone.
        // SAFETY: as above.
        unsafe { callgate::env::set_var("CALLGATE_OTHER", "attach=per_call") };
        // SAFETY: as above.
        unsafe { callgate::env::remove_var("CALLGATE_OTHER") };
        assert_eq!(callgate::settings(), settings);

        // SAFETY: as above.
        unsafe { callgate::env::remove_var("CALLGATE") };
        assert_eq!(std::env::var_os("CALLGATE"), None);
        assert_eq!(callgate::settings(), Settings::default());
        let (seen, attached_after, binds) = call_and_observe();
        assert!(
            seen >= 0 && attached_after && binds == 1,
            "{seen} {attached_after} {binds}"
        );
    });
}

#[test]
fn malformed_values_are_ignored_with_one_warning() {
    let output = in_child(Some("attach=sometimes,panic=abort,colour=blue"), || {
        // The well-formed part is kept, the rest ignored.
        let settings = callgate::settings();
        assert_eq!(
            (settings.attach, settings.panic),
            (AttachMode::Bound, PanicMode::Abort)
        );

        for value in ["junk", "attach=", "=,=", "attach=per_call,attach=often"] {
            // SAFETY: the child's test thread is the only one touching
            // the environment.
            unsafe { callgate::env::set_var("CALLGATE", value) };
            let (seen, _, _) = call_and_observe();
            assert!(
                seen >= 0,
                "CALLGATE={value}: the call ran on no context: {seen}"
            );
        }
        assert_eq!(callgate::settings().attach, AttachMode::PerCall);
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            // SAFETY: as above.
            unsafe { callgate::env::set_var("CALLGATE", OsStr::from_bytes(b"attach=\xff")) };
            assert_eq!(callgate::settings(), Settings::default());
        }
        // SAFETY: as above.
        unsafe { callgate::env::clear() };
        assert_eq!(callgate::settings(), Settings::default());
    });
    let Some(output) = output else { return };
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.matches(WARNING).count(),
        1,
        "expected exactly one warning:\n{stderr}"
    );
    assert!(stderr.contains("attach=sometimes"), "{stderr}");
}
