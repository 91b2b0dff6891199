use callgate::c_callback;
use std::ffi::CStr;
use std::fmt;
#[derive(Default)]
pub struct Scratch {
    text: String,
}
impl callgate::Local for Scratch {}
#[derive(Debug)]
pub struct ParseError;
impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a number")
    }
}
/// Parses `text` into `*out`, using this thread's scratch buffer.
///
/// C: `int32_t parse(const char *text, double *out, const char *unit);`
///
/// # Safety
///
/// Each pointer argument is NULL or valid for the duration of the call.
#[unsafe(no_mangle)]
#[deny(improper_ctypes_definitions)]
#[deny(unsafe_op_in_unsafe_fn)]
pub unsafe extern "C" fn parse(
    text: *const ::core::ffi::c_char,
    out: *mut f64,
    unit: *const ::core::ffi::c_char,
) -> i32 {
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn __callgate_body(
        text: &CStr,
        out: &mut f64,
        unit: Option<&str>,
        buf: &mut Scratch,
    ) -> Result<i32, ParseError> {
        buf.text.clear();
        buf.text.push_str(text.to_str().map_err(|_| ParseError)?);
        *out = buf.text.trim().parse().map_err(|_| ParseError)?;
        if unit == Some("%") {
            *out /= 100.0;
        }
        Ok(0)
    }
    static __CALLGATE_SITE: ::callgate::__private::Site = ::callgate::__private::Site {
        name: "parse",
        attach: ::callgate::__private::Attach::Bound,
        gate: ::callgate::__private::GatePolicy::Fail,
        on_panic: ::callgate::__private::OnFailure::Return,
        on_error: ::callgate::__private::OnFailure::Return,
    };
    #[used]
    #[cfg_attr(
        any(
            target_os = "linux",
            target_os = "android",
            target_os = "freebsd",
            target_os = "netbsd",
            target_os = "openbsd",
            target_os = "dragonfly",
            target_os = "illumos",
            target_os = "solaris",
        ),
        unsafe(link_section = ".note.callgate")
    )]
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 240> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0export\0parse\0int32_t @(const char *text, double *out, const char *unit)\0\0Parses `text` into `*out`, using this thread's scratch buffer.\n\nC: `int32_t parse(const char *text, double *out, const char *unit);`\0\0callgate-end\0\0\0\0",
    );
    let __callgate_on_error = || -> i32 { -1 };
    let __callgate_on_panic = || -> i32 { -2 };
    let _ = <Scratch as ::callgate::Local>::bind;
    static __CALLGATE_LOCAL_KEY: ::callgate::__private::LocalKey<Scratch> = ::callgate::__private::LocalKey::new();
    ::callgate::__private::call_local::<
        _,
        Scratch,
    >(
        &__CALLGATE_SITE,
        &__CALLGATE_LOCAL_KEY,
        __callgate_on_error,
        __callgate_on_panic,
        move |
            _: &::callgate::__private::Frame,
            mut __callgate_local_3: ::callgate::__private::LocalRef<'_, Scratch>|
        {
            ::callgate::__private::check_disjoint(
                &[
                    unsafe { ::callgate::__private::Region::c_string(text, "text") },
                    ::callgate::__private::Region::values(
                        out as *const f64,
                        1,
                        true,
                        "out",
                    ),
                    unsafe { ::callgate::__private::Region::c_string(unit, "unit") },
                ],
            )?;
            let text = unsafe { ::callgate::__private::cstr_arg(text, "text") }?;
            let out = unsafe { ::callgate::__private::mut_arg(out, "out") }?;
            {
                #[allow(unused_imports)]
                use ::callgate::__private::{CheckedStored as _, UncheckedStored as _};
                {
                    let __callgate_stored = &out;
                    unsafe {
                        (&::callgate::__private::Stored::<f64>::new())
                            .check(::core::ptr::from_ref(&**__callgate_stored), 1, "out")
                    }?;
                }
            }
            let unit = unsafe { ::callgate::__private::opt_str_arg(unit, "unit") }?;
            ::callgate::__private::from_result(
                __callgate_body(text, out, unit, &mut *__callgate_local_3),
            )
        },
    )
}
fn setup() -> Result<(), ParseError> {
    Ok(())
}
const _: () = {
    fn __callgate_init_body() -> ::core::result::Result<
        (),
        ::callgate::__private::Failure,
    > {
        ::callgate::__private::from_result(setup())
    }
    extern "C" fn __callgate_init_ctor() {
        if ::core::cfg!(
            any(target_os = "linux", target_os = "android", target_os = "freebsd",
            target_os = "netbsd", target_os = "openbsd", target_os = "dragonfly",
            target_os = "illumos", target_os = "solaris",)
        ) {
            unsafe {
                ::callgate::__private::start_init("setup", false, __callgate_init_body)
            };
        } else {
            ::callgate::__private::run_init("setup", false, __callgate_init_body);
        }
    }
    #[cfg(
        any(
            target_os = "linux",
            target_os = "android",
            target_os = "freebsd",
            target_os = "netbsd",
            target_os = "openbsd",
            target_os = "dragonfly",
            target_os = "illumos",
            target_os = "solaris",
        )
    )]
    const _: () = {
        extern "C" fn __callgate_init_arm() {
            ::callgate::__private::arm_init(false);
        }
        #[used]
        #[unsafe(link_section = ".init_array.00101")]
        static __CALLGATE_INIT_ARM: extern "C" fn() = __callgate_init_arm;
    };
    #[used]
    #[cfg_attr(
        any(
            target_os = "linux",
            target_os = "android",
            target_os = "freebsd",
            target_os = "netbsd",
            target_os = "openbsd",
            target_os = "dragonfly",
            target_os = "illumos",
            target_os = "solaris",
        ),
        unsafe(link_section = ".init_array")
    )]
    #[cfg_attr(target_vendor = "apple", unsafe(link_section = "__DATA,__mod_init_func"))]
    #[cfg_attr(windows, unsafe(link_section = ".CRT$XCU"))]
    static __CALLGATE_INIT: extern "C" fn() = __callgate_init_ctor;
    #[cfg(
        not(
            any(
                any(
                    target_os = "linux",
                    target_os = "android",
                    target_os = "freebsd",
                    target_os = "netbsd",
                    target_os = "openbsd",
                    target_os = "dragonfly",
                    target_os = "illumos",
                    target_os = "solaris",
                ),
                target_vendor = "apple",
                windows,
            )
        )
    )]
    ::core::compile_error!(
        "#[callgate::init] needs load-time constructors, which this target does not have"
    );
};
