use callgate::c_callback;

// A `local` callback is passed to C as a function pointer; it still cannot
// return a borrowed `&str`.
#[c_callback(local, on_panic = std::ptr::null())]
pub fn greeting(loud: bool) -> &str {
    if loud { "HELLO" } else { "hello" }
}

fn main() {}
