//! A `#[callgate::init]` that returns `Err`: callbacks return `on_error` with
//! the init's message as the last error.

use std::fmt;

use callgate::{InitState, c_callback};
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn m_call_i32(cb: extern "C" fn(i32) -> i32, value: i32) -> i32;
}

#[derive(Debug)]
pub struct MissingConfig;

impl fmt::Display for MissingConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no configuration file")
    }
}

#[callgate::init]
fn load_config() -> Result<(), MissingConfig> {
    Err(MissingConfig)
}

#[c_callback(on_error = -1, on_panic = -2)]
fn lookup(value: i32) -> i32 {
    value
}

#[test]
fn a_failed_init_makes_callbacks_return_on_error() {
    let state = callgate::init_state();
    assert!(
        matches!(&state, InitState::Failed(message) if message.contains("no configuration file")),
        "{state:?}"
    );
    callgate::clear_last_error();
    // SAFETY: `lookup` is a valid callback.
    assert_eq!(unsafe { m_call_i32(lookup, 5) }, -1);
    let message = callgate::last_error().unwrap_or_default();
    assert!(message.starts_with("initialisation failed: "), "{message}");
    assert!(message.contains("no configuration file"), "{message}");
}
