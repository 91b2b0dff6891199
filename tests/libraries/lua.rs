//! Lua 5.4 calling Rust: a Lua C function that is a `#[c_callback]` with
//! state, which `lua_CFunction` passes no `void *` for: the state is the C
//! closure's upvalue, reached with `#[user_data(from = …)]`.
//!
//! And a `Closure::new` closure (an `FnMut` with state)
//! called from a Lua C function that is a `#[c_callback]`, registered with
//! `lua_pushcclosure`, the closure's data as its upvalue. The closure
//! raises Lua errors (`luaL_error`, `luaL_checkinteger`), which `longjmp`
//! out of it and out of the C function to the `pcall` of the Lua code:
//! both calls are abandoned. Each call after such a jump is nested in the
//! C function's call, and still gets the closure's turn: it finds the
//! abandoned call certainly gone. The closure keeps its state throughout
//! and is dropped exactly once.
//!
//! And a `Closure::with_accessor` closure that is itself the Lua C
//! function: its C function finds its data in the upvalue, with no C
//! function of the test's own in between.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use callgate::{Closure, UserData, c_callback};

#[allow(non_camel_case_types)]
#[repr(C)]
struct lua_State {
    _opaque: [u8; 0],
}

type LuaCFunction = unsafe extern "C" fn(*mut lua_State) -> c_int;

/// `LUA_REGISTRYINDEX` of Lua 5.4 (`-LUAI_MAXSTACK - 1000`).
const LUA_REGISTRYINDEX: c_int = -1_000_000 - 1000;
/// `LUA_OK`.
const LUA_OK: c_int = 0;
/// `LUA_MULTRET`.
const LUA_MULTRET: c_int = -1;

unsafe extern "C" {
    fn luaL_newstate() -> *mut lua_State;
    fn luaL_openlibs(l: *mut lua_State);
    fn lua_close(l: *mut lua_State);
    fn luaL_loadstring(l: *mut lua_State, chunk: *const c_char) -> c_int;
    fn lua_pcallk(
        l: *mut lua_State,
        nargs: c_int,
        nresults: c_int,
        errfunc: c_int,
        ctx: isize,
        k: *const c_void,
    ) -> c_int;
    fn lua_pushcclosure(l: *mut lua_State, function: LuaCFunction, upvalues: c_int);
    fn lua_pushlightuserdata(l: *mut lua_State, pointer: *mut c_void);
    fn lua_touserdata(l: *mut lua_State, index: c_int) -> *mut c_void;
    fn lua_setglobal(l: *mut lua_State, name: *const c_char);
    fn lua_pushinteger(l: *mut lua_State, value: i64);
    fn lua_pushnil(l: *mut lua_State);
    fn lua_pushstring(l: *mut lua_State, text: *const c_char) -> *const c_char;
    fn lua_tointegerx(l: *mut lua_State, index: c_int, is_number: *mut c_int) -> i64;
    fn lua_tolstring(l: *mut lua_State, index: c_int, len: *mut usize) -> *const c_char;
    fn lua_settop(l: *mut lua_State, index: c_int);
    fn luaL_checkinteger(l: *mut lua_State, arg: c_int) -> i64;
    fn luaL_error(l: *mut lua_State, format: *const c_char, ...) -> c_int;
}

/// `lua_upvalueindex(i)`.
fn upvalue_index(i: c_int) -> c_int {
    LUA_REGISTRYINDEX - i
}

/// The state of `add`: the numbers added so far.
#[derive(Default)]
struct Sum {
    total: i64,
    calls: u64,
}

/// After a failed call: `nil` and callgate's last error, Lua's convention
/// for a function that fails without raising an error.
fn push_failure(l: *mut lua_State) -> c_int {
    let message = callgate::last_error().unwrap_or_default();
    let message = std::ffi::CString::new(message).unwrap_or_default();
    // SAFETY: the state Lua passed to the failed call; Lua copies the
    // string.
    unsafe {
        lua_pushnil(l);
        lua_pushstring(l, message.as_ptr());
    }
    2
}

/// The Lua C function `add(n)`: adds `n` to the sum in its upvalue and
/// returns the sum and the count of calls. `lua_CFunction` is
/// `int (*)(lua_State *L)`, so the sum is reached through
/// `lua_touserdata(L, lua_upvalueindex(1))`: no C function of the test's
/// own stands between Lua and this one.
#[c_callback(local, on_error = push_failure(l))]
fn add(
    l: *mut lua_State,
    // SAFETY: Lua passes its state to a C closure it calls; the upvalue is
    // a light userdata (NULL if it is not one, which is an error).
    #[user_data(from = unsafe { lua_touserdata(l, upvalue_index(1)) })] sum: &mut Sum,
) -> Result<c_int, String> {
    let mut is_number = 0;
    // SAFETY: as above; reading argument 1, whatever it is.
    let n = unsafe { lua_tointegerx(l, 1, &mut is_number) };
    if is_number == 0 {
        return Err("add: expected an integer".to_owned());
    }
    sum.total += n;
    sum.calls += 1;
    // SAFETY: as above.
    unsafe {
        lua_pushinteger(l, sum.total);
        lua_pushinteger(l, i64::try_from(sum.calls).unwrap_or(i64::MAX));
    }
    Ok(2)
}

/// The closure's data-first function: `int (*)(void *data, lua_State *L)`.
type ClosureFn = unsafe extern "C" fn(*mut c_void, *mut lua_State) -> c_int;

/// What the C function's upvalue points to: the closure to call.
struct Callable {
    call: ClosureFn,
    data: *mut c_void,
}

/// Drops of the closure's state.
static DROPS: AtomicUsize = AtomicUsize::new(0);

/// Part of the closure's state: counts its drops.
struct CountDrop;

impl Drop for CountDrop {
    fn drop(&mut self) {
        DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// The Lua C function `double(n)`, as a Lua library would write it in
/// Rust: hands the call to the closure in its upvalue. If the closure
/// refuses the call (the fallback, 0 results), returns `nil` and callgate's
/// last error.
#[c_callback(on_panic = 0)]
fn lua_double(l: *mut lua_State) -> c_int {
    // SAFETY: Lua calls this with its state, and the closure's upvalue
    // holds a `Callable` that outlives the state (the test keeps it).
    let callable = unsafe { &*lua_touserdata(l, upvalue_index(1)).cast::<Callable>() };
    // SAFETY: the closure and its data belong together and outlive the
    // call (the test frees it after closing the state).
    let results = unsafe { (callable.call)(callable.data, l) };
    if results == 0 {
        let message = callgate::last_error().unwrap_or_default();
        let message = std::ffi::CString::new(message).unwrap_or_default();
        // SAFETY: the state Lua passed; Lua copies the string.
        unsafe {
            lua_pushnil(l);
            lua_pushstring(l, message.as_ptr());
        }
        return 2;
    }
    results
}

/// Runs `chunk` with `lua_pcall`; its first result as an integer, or the
/// error message.
///
/// # Safety
///
/// `l` is a live Lua state.
unsafe fn run(l: *mut lua_State, chunk: &CStr) -> Result<i64, String> {
    // SAFETY: a live state (caller obligation) and a NUL-terminated chunk.
    let mut status = unsafe { luaL_loadstring(l, chunk.as_ptr()) };
    if status == LUA_OK {
        // SAFETY: as above; `lua_pcall(L, 0, LUA_MULTRET, 0)` of the chunk
        // just loaded.
        status = unsafe { lua_pcallk(l, 0, LUA_MULTRET, 0, 0, std::ptr::null()) };
    }
    // SAFETY: as above; the result (or the message) is at index 1.
    let outcome = unsafe {
        if status == LUA_OK {
            Ok(lua_tointegerx(l, 1, std::ptr::null_mut()))
        } else {
            let message = lua_tolstring(l, -1, std::ptr::null_mut());
            Err(CStr::from_ptr(message).to_string_lossy().into_owned())
        }
    };
    // SAFETY: as above.
    unsafe { lua_settop(l, 0) };
    outcome
}

/// A thousand calls of the closure left by `luaL_error`, and as many by
/// `luaL_checkinteger`, each followed by calls that still run it, from Lua
/// code whose `pcall` catches the errors. Before, the first call after a
/// jump failed with "called again from inside its own call" on this thread
/// from then on.
#[test]
fn a_closure_left_by_lua_errors_from_a_c_callback_stays_callable() {
    let state = CountDrop;
    let mut calls: i64 = 0;
    let closure = Closure::<fn(*mut lua_State) -> c_int>::new(0, move |l: *mut lua_State| {
        let _state = &state;
        calls += 1;
        // SAFETY: the state Lua passed to `double`. Both errors `longjmp`
        // out of this call and the C function's, which hold nothing to
        // drop on the way.
        unsafe {
            let n = luaL_checkinteger(l, 1);
            if n < 0 {
                luaL_error(l, c"negative argument to double: %I".as_ptr(), n);
            }
            lua_pushinteger(l, n * 2);
            lua_pushinteger(l, calls);
        }
        2
    });
    let callable = Callable {
        call: closure.data_first(),
        data: closure.data(),
    };

    // SAFETY: no precondition; the state is closed below.
    let l = unsafe { luaL_newstate() };
    assert!(!l.is_null(), "luaL_newstate failed");
    // SAFETY: `l` is live; the upvalue points to `callable`, which
    // outlives the state.
    unsafe {
        luaL_openlibs(l);
        lua_pushlightuserdata(l, (&raw const callable).cast_mut().cast());
        lua_pushcclosure(l, lua_double, 1);
        lua_setglobal(l, c"double".as_ptr());
    }
    let script = c"
        local calls = 0
        -- A call of the closure that must run: returns `2 * i`, and the
        -- closure's own count of its calls, which goes on across the
        -- calls the errors left.
        local function check(i)
            local doubled, count = double(i)
            assert(doubled == 2 * i, count)
            calls = calls + 1
            assert(count == calls, 'the closure lost its state')
        end
        for i = 1, 1000 do
            local ok, err = pcall(double, -i)
            assert(not ok, 'double(-i) returned')
            assert(string.find(err, 'negative argument to double: ' .. -i, 1, true), err)
            calls = calls + 1
            check(i)
            ok, err = pcall(double, 'not a number')
            assert(not ok, 'double(\"not a number\") returned')
            assert(string.find(err, 'number expected', 1, true), err)
            calls = calls + 1
            check(i)
        end
        check(21)
        return double(21)
    ";
    // SAFETY: `l` is live.
    let result = unsafe { run(l, script) };
    // SAFETY: closed once; nothing uses `l` afterwards.
    unsafe { lua_close(l) };
    assert_eq!(result, Ok(42));
    assert_eq!(DROPS.load(Ordering::SeqCst), 0);
    drop(closure);
    assert_eq!(DROPS.load(Ordering::SeqCst), 1, "dropped exactly once");
}

/// `add` from Lua code, its state its upvalue: every call reaches the sum
/// through the accessor; a wrong argument and a C closure without the
/// upvalue fail with `nil` and a message, and the state is freed once,
/// after the Lua state is closed.
#[test]
fn a_c_function_reaches_its_upvalue_through_the_accessor() {
    let sum = UserData::new(Sum::default()).into_raw();
    // SAFETY: no precondition; the state is closed below.
    let l = unsafe { luaL_newstate() };
    assert!(!l.is_null(), "luaL_newstate failed");
    // SAFETY: `l` is live; `sum` outlives the state (freed after it is
    // closed). `stray` is `add` with a number for an upvalue.
    unsafe {
        luaL_openlibs(l);
        lua_pushlightuserdata(l, sum);
        lua_pushcclosure(l, add, 1);
        lua_setglobal(l, c"add".as_ptr());
        lua_pushinteger(l, 7);
        lua_pushcclosure(l, add, 1);
        lua_setglobal(l, c"stray".as_ptr());
    }
    let script = c"
        local total, calls
        for i = 1, 100 do
            total, calls = add(i)
        end
        assert(total == 5050 and calls == 100, 'the sum lost its state')
        local none, message = add('x')
        assert(none == nil and message == 'add: expected an integer', message)
        none, message = stray(1)
        assert(none == nil and message == 'argument `sum` is NULL', message)
        return (add(0))
    ";
    // SAFETY: `l` is live.
    let result = unsafe { run(l, script) };
    // SAFETY: closed once; nothing uses `l` afterwards.
    unsafe { lua_close(l) };
    assert_eq!(result, Ok(5050));
    // SAFETY: from `into_raw`; Lua is closed, so nothing uses it any more.
    let sum = unsafe { UserData::<Sum>::from_raw(sum) };
    assert_eq!(sum.calls, 101);
}

/// Drops of the accessed closure's state.
static ACCESSED_DROPS: AtomicUsize = AtomicUsize::new(0);

/// Part of the accessed closure's state: counts its drops.
struct CountAccessedDrop;

impl Drop for CountAccessedDrop {
    fn drop(&mut self) {
        ACCESSED_DROPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// `count(n)` is a `Closure` pushed with `lua_pushcclosure`, its data the
/// upvalue its C function reads: it keeps a running total across calls,
/// also across calls `luaL_checkinteger` abandoned with a Lua error, and is
/// dropped exactly once, after the Lua state is closed.
#[test]
fn a_closure_is_a_lua_c_function_reaching_its_data_through_an_upvalue() {
    let state = CountAccessedDrop;
    let mut total: i64 = 0;
    let (count, count_fn) = Closure::with_accessor(
        0,
        // SAFETY: Lua passes its state to a C closure it calls, whose
        // upvalue is this closure's data.
        |l: *mut lua_State| unsafe { lua_touserdata(l, upvalue_index(1)) },
        move |l: *mut lua_State| -> c_int {
            let _state = &state;
            // SAFETY: the state Lua passed; a non-integer argument raises
            // a Lua error, which `longjmp`s out of this call.
            total += unsafe { luaL_checkinteger(l, 1) };
            // SAFETY: as above.
            unsafe { lua_pushinteger(l, total) };
            1
        },
    );
    // SAFETY: no precondition; the state is closed below.
    let l = unsafe { luaL_newstate() };
    assert!(!l.is_null(), "luaL_newstate failed");
    // SAFETY: `l` is live; the upvalue is the closure's data, which
    // outlives the state.
    unsafe {
        luaL_openlibs(l);
        lua_pushlightuserdata(l, count.data());
        lua_pushcclosure(l, count_fn, 1);
        lua_setglobal(l, c"count".as_ptr());
    }
    let script = c"
        local total
        for i = 1, 100 do
            total = count(i)
            local ok, err = pcall(count, 'not a number')
            assert(not ok and string.find(err, 'number expected', 1, true), err)
        end
        assert(total == 5050, 'the closure lost its state')
        return count(0)
    ";
    // SAFETY: `l` is live.
    let result = unsafe { run(l, script) };
    // SAFETY: closed once; nothing uses `l` afterwards.
    unsafe { lua_close(l) };
    assert_eq!(result, Ok(5050));
    assert_eq!(ACCESSED_DROPS.load(Ordering::SeqCst), 0);
    drop(count);
    assert_eq!(
        ACCESSED_DROPS.load(Ordering::SeqCst),
        1,
        "dropped exactly once"
    );
}
