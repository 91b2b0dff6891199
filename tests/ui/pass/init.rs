// `#[callgate::init]` with and without `background`, returning `()` or a
// `Result`, with `crate = path`.
use std::sync::atomic::{AtomicBool, Ordering};

static READY: AtomicBool = AtomicBool::new(false);

#[callgate::init]
fn setup() {
    READY.store(true, Ordering::Relaxed);
}

#[derive(Debug)]
pub struct SetupError;

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("setup failed")
    }
}

#[callgate::init]
fn fallible_setup() -> Result<(), SetupError> {
    Ok(())
}

#[callgate::init(background)]
fn warm_up() {}

#[callgate::init(background, crate = ::callgate)]
fn warm_up_io() -> std::io::Result<()> {
    Ok(())
}

#[callgate::c_callback(on_panic = false)]
pub fn is_ready() -> bool {
    READY.load(Ordering::Relaxed)
}

fn main() {
    // The gate waits for every init, the background ones included.
    assert!(is_ready());
    assert_eq!(callgate::init_state(), callgate::InitState::Ready);
}
