//! A failed init: every gated call returns its `on_error` value with the
//! init's message as the last error.

use callgate::__private::{self as cg, Failure};
use callgate::InitState;
use callgate_dev::{Spawn, gated, run_threads};

fn broken_init() -> Result<(), Failure> {
    Err(Failure::new("config file missing"))
}

#[test]
fn a_failed_init_fails_every_call_with_its_message() {
    crate::child::alone(|| {
        cg::run_init("broken_init", false, broken_init);
        let expected = "initialisation failed: `broken_init`: config file missing";
        assert_eq!(
            callgate::init_state(),
            InitState::Failed("`broken_init`: config file missing".into())
        );
        assert_eq!(gated(1), -1);
        assert_eq!(callgate::last_error().as_deref(), Some(expected));

        let results = run_threads(gated, 4, 10, Spawn::default());
        assert!(
            results.iter().all(|r| r.first == -1 && r.changes == 0),
            "{results:?}"
        );
        assert!(callgate::stats().errors_returned >= 41);
    });
}
