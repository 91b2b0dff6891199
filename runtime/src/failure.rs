//! Failures on their way to the last error: the message of an `Err`, a bad
//! argument, a failed init or a panic.

use core::any::Any;
use core::fmt::Display;
use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::diag;

/// A failure that becomes the thread's last error.
#[derive(Debug)]
pub struct Failure {
    message: Cow<'static, str>,
}

impl Failure {
    /// A failure with this message.
    pub fn new(message: impl Into<Cow<'static, str>>) -> Failure {
        Failure {
            message: message.into(),
        }
    }

    /// A failure carrying `error.to_string()`.
    pub fn from_display(error: &dyn Display) -> Failure {
        Failure::new(error.to_string())
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The message, by value.
    pub(crate) fn into_message(self) -> Cow<'static, str> {
        self.message
    }
}

/// How messages name the callback `name` (a `Site`'s name): a closure
/// made in a `#[c_callback]` fn is named after that fn, without the item
/// the trampoline nests the fn's body in
/// (`lib::init::__callgate_body::{{closure}}` → `lib::init::{{closure}}`).
#[cold]
pub(crate) fn callback_name(name: &str) -> Cow<'_, str> {
    const BODY: &[u8] = b"::__callgate_body";
    match name
        .as_bytes()
        .windows(BODY.len())
        .position(|at| at == BODY)
    {
        Some(at) => Cow::Owned([&name[..at], &name[at + BODY.len()..]].concat()),
        None => Cow::Borrowed(name),
    }
}

/// The text of a panic payload; the payload is dropped here, and a panic
/// in its `Drop` (a panic while handling a panic) aborts with a message
/// instead of unwinding into C.
pub(crate) fn payload_message(payload: Box<dyn Any + Send>) -> String {
    let message = if let Some(text) = payload.downcast_ref::<&'static str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "panic payload of a non-string type".to_owned()
    };
    if catch_unwind(AssertUnwindSafe(move || drop(payload))).is_err() {
        diag::abort_with(&format!(
            "callgate: dropping the payload of a panic (\"{message}\") panicked again; aborting"
        ));
    }
    message
}

#[cfg(test)]
mod tests;
