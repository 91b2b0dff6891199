//! Runtime settings from the `CALLGATE` environment variable (see
//! [`crate::settings()`]), read on first use and cached; [`crate::env`]
//! updates the cache. `panic=quiet` needs a panic hook, which the boundary
//! installs (`boundary::quiet_panics_if_asked`).

use std::ffi::OsStr;

use crate::diag;
use crate::sync::{AtomicU32, Ordering};

/// The environment variable the settings are read from.
pub const VAR: &str = "CALLGATE";

/// How a callback attaches its thread: the `attach=` setting of the whole
/// process, and a callback's own `attach = …` option.
///
/// A thread is served per call when either asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AttachMode {
    /// Bind a thread on its first call until it exits (the default).
    #[default]
    Bound,
    /// Attach and release around every outermost call.
    PerCall,
}

/// What callbacks do when their body panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PanicMode {
    /// Return the fallback value and record the message (the default).
    /// Rust's panic hook prints the message (and, with `RUST_BACKTRACE`, a
    /// backtrace) on standard error first, as for any panic.
    #[default]
    Catch,
    /// As `Catch`, but a panic inside a callback prints nothing: the
    /// fallback and the last error are all C sees of it. Panics outside
    /// callbacks (an init's, a thread of the library's own) still print.
    Quiet,
    /// Abort the process with the message.
    Abort,
}

/// The runtime settings in force; see [`settings`](crate::settings()).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Settings {
    /// `attach=bound|per_call`.
    pub attach: AttachMode,
    /// `panic=catch|quiet|abort`.
    pub panic: PanicMode,
}

const UNREAD: u32 = u32::MAX;
/// The encoded settings, or `UNREAD`.
static CURRENT: AtomicU32 = AtomicU32::new(UNREAD);
static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl Settings {
    fn encode(self) -> u32 {
        let panic = match self.panic {
            PanicMode::Catch => 0,
            PanicMode::Abort => 1,
            PanicMode::Quiet => 2,
        };
        (self.attach == AttachMode::PerCall) as u32 | panic << 1
    }

    fn decode(bits: u32) -> Settings {
        Settings {
            attach: if bits & 1 != 0 {
                AttachMode::PerCall
            } else {
                AttachMode::Bound
            },
            panic: match bits >> 1 {
                1 => PanicMode::Abort,
                2 => PanicMode::Quiet,
                _ => PanicMode::Catch,
            },
        }
    }

    /// Parses a `CALLGATE` value; returns the settings and the problems found.
    pub(crate) fn parse(text: &str) -> (Settings, Vec<String>) {
        let mut settings = Settings::default();
        let mut problems = Vec::new();
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            match item
                .split_once('=')
                .map(|(key, value)| (key.trim(), value.trim()))
            {
                Some(("attach", "bound")) => settings.attach = AttachMode::Bound,
                Some(("attach", "per_call")) => settings.attach = AttachMode::PerCall,
                Some(("panic", "catch")) => settings.panic = PanicMode::Catch,
                Some(("panic", "abort")) => settings.panic = PanicMode::Abort,
                Some(("panic", "quiet")) => settings.panic = PanicMode::Quiet,
                Some(("attach", value)) => problems.push(format!(
                    "`attach={value}`: expected `attach=bound` or `attach=per_call`"
                )),
                Some(("panic", value)) => problems.push(format!(
                    "`panic={value}`: expected `panic=catch`, `panic=quiet` or `panic=abort`"
                )),
                Some((key, _)) => {
                    problems.push(format!("unknown key `{key}`: expected `attach` or `panic`"))
                }
                None => problems.push(format!("`{item}`: expected `key=value`")),
            }
        }
        (settings, problems)
    }
}

/// The settings in force, reading `CALLGATE` on first use.
#[inline]
pub(crate) fn current() -> Settings {
    // Relaxed: a self-contained value, publishing nothing.
    match CURRENT.load(Ordering::Relaxed) {
        UNREAD => load(),
        bits => Settings::decode(bits),
    }
}

#[cold]
fn load() -> Settings {
    let read = parse_and_report(std::env::var_os(VAR).as_deref());
    // Relaxed: see `current`. Only `UNREAD` is replaced, so settings that
    // `env::set_var` stored meanwhile win.
    match CURRENT.compare_exchange(UNREAD, read.encode(), Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => read,
        Err(bits) => Settings::decode(bits),
    }
}

/// Re-reads the settings from `value` (the value of `CALLGATE`, or `None`
/// when it is unset), reporting problems once per process.
pub(crate) fn reload(value: Option<&OsStr>) -> Settings {
    let settings = parse_and_report(value);
    // Relaxed: see `current`.
    CURRENT.store(settings.encode(), Ordering::Relaxed);
    settings
}

/// Returns the settings to their defaults, as if `CALLGATE` were unset.
pub(crate) fn reset_to_default() {
    // Relaxed: see `current`.
    CURRENT.store(Settings::default().encode(), Ordering::Relaxed);
}

/// Parses a value of `CALLGATE`, reporting the process's first malformed
/// value on standard error.
fn parse_and_report(value: Option<&OsStr>) -> Settings {
    let (settings, problems) = match value {
        None => (Settings::default(), Vec::new()),
        Some(value) => match value.to_str() {
            Some(text) => Settings::parse(text),
            None => (
                Settings::default(),
                vec!["the value is not valid UTF-8".to_owned()],
            ),
        },
    };
    // Relaxed: the flag guards nothing but the message itself.
    if !problems.is_empty() && !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
        diag::report(&format!(
            "callgate: ignoring malformed parts of {VAR}: {}",
            problems.join("; ")
        ));
    }
    settings
}

#[cfg(test)]
mod tests;
