// The plugin the `tests/hosts/plugins.rs` hosts load: one small callgate `cdylib`,
// built in a throwaway workspace under the target directory, of which the
// test makes many copies, each with a soname of its own. The C declarations
// are in `tests/c/hosts/plugin_host.h`.
//
// The background init sleeps `PLUGIN_INIT_MS` milliseconds (0 if unset):
// long enough for a host to `dlclose` the library while it runs.

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use callgate::c_callback;

callgate::export_error_api!(plugin);

#[callgate::init(background)]
fn plugin_init() -> Result<(), String> {
    let millis = std::env::var("PLUGIN_INIT_MS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(0);
    std::thread::sleep(Duration::from_millis(millis));
    Ok(())
}

/// The calls this copy's callbacks served, all threads together: each
/// copy has its own, so a call that reached another copy shows.
static SERVED: AtomicU64 = AtomicU64::new(0);

fn served() {
    // Relaxed: a count, read after the threads are joined.
    SERVED.fetch_add(1, Ordering::Relaxed);
}

/// `value + 1`, on a thread bound to the plugin.
#[c_callback(on_panic = -1)]
fn plugin_call(value: i32) -> i32 {
    served();
    value.wrapping_add(1)
}

/// `value + 1`, attached for the duration of the call only.
#[c_callback(attach = per_call, on_panic = -1)]
fn plugin_call_per_call(value: i32) -> i32 {
    served();
    value.wrapping_add(1)
}

/// A `#[local]` value: how many calls the thread it serves made to
/// `plugin_count`. Contexts, and their values, are reused by later
/// threads, so `bind` starts the count again.
#[derive(Default)]
pub struct Count(i32);

impl callgate::Local for Count {
    fn bind(&mut self) {
        self.0 = 0;
    }
}

/// The calling thread's count of calls to this callback, this one
/// included: the `#[local]` value persists on a bound thread.
#[c_callback(on_panic = -1)]
fn plugin_count(#[local] count: &mut Count) -> i32 {
    served();
    count.0 += 1;
    count.0
}

/// Fails with the message `plugin error CODE` (a per-call attachment): the
/// thread keeps a last error, and nothing else of the plugin.
#[c_callback(attach = per_call, on_error = -1)]
fn plugin_fail(code: i32) -> Result<i32, String> {
    served();
    Err(format!("plugin error {code}"))
}

/// How many callbacks the plugin served, all threads together. Not a
/// callback: it does not attach the calling thread.
#[unsafe(no_mangle)]
pub extern "C" fn plugin_calls() -> u64 {
    // Relaxed: read after the calling threads were joined.
    SERVED.load(Ordering::Relaxed)
}

/// How many contexts the plugin ever created. Not a callback.
#[unsafe(no_mangle)]
pub extern "C" fn plugin_contexts() -> u64 {
    callgate::stats().contexts_created
}

thread_local! {
    static MARK: Cell<u8> = const { Cell::new(0) };
}

/// The address of one of the plugin's thread-locals for the calling thread:
/// it lies in the same TLS block as callgate's slot, so the host can tell
/// whether glibc put the block in static TLS (just below the thread
/// pointer) or in dynamic TLS.
#[unsafe(no_mangle)]
pub extern "C" fn plugin_tls_address() -> *const c_void {
    MARK.with(|mark| std::ptr::from_ref(mark).cast())
}
