//! `attach = per_call` releases the thread's context when the outermost call
//! returns; the default (`bound`) keeps it until the thread exits.

use callgate::__private::current_context_id;
use callgate::c_callback;
// Links the C harness library (`tests/c/*.c`), which the dev package carries.
use callgate_dev as _;

unsafe extern "C" {
    fn m_call_i32(cb: extern "C" fn(i32) -> i32, value: i32) -> i32;
}

fn call(cb: extern "C" fn(i32) -> i32, value: i32) -> i32 {
    // SAFETY: `cb` is a valid callback.
    unsafe { m_call_i32(cb, value) }
}

fn context_id() -> i32 {
    current_context_id().map_or(-1, |id| id as i32)
}

#[c_callback(attach = per_call, on_panic = -2)]
fn per_call(nested: i32) -> i32 {
    let outer = context_id();
    if nested > 0 {
        let inner = call(per_call, nested - 1);
        assert_eq!(
            inner, outer,
            "a nested call runs on the outer call's context"
        );
        // The inner call returned, but this one has not: still attached.
        assert_eq!(context_id(), outer);
    }
    outer
}

#[c_callback(on_panic = -2)]
fn bound(_: i32) -> i32 {
    context_id()
}

#[test]
fn per_call_releases_at_the_outermost_return() {
    std::thread::spawn(|| {
        assert_eq!(current_context_id(), None);
        let id = call(per_call, 2);
        assert!(id >= 0, "the call ran attached");
        assert_eq!(
            current_context_id(),
            None,
            "released when the outermost call returned"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn bound_stays_attached_until_the_thread_exits() {
    std::thread::spawn(|| {
        let id = call(bound, 0);
        assert!(id >= 0);
        assert_eq!(current_context_id(), Some(id as u32));
        assert_eq!(call(bound, 0), id, "later calls find the same context");
    })
    .join()
    .unwrap();
}
