use callgate::{OutBuf, c_callback};
use std::ffi::{CString, c_char};
callgate::export_free!(pub data_string_free : CString);
callgate::export_free!(pub data_bytes_free : Vec < u8 >);
/// Scales `values` into `out` (`count` of each) and describes them.
///
/// # Safety
///
/// Each pointer argument is NULL or valid for the duration of the call.
#[unsafe(no_mangle)]
#[deny(improper_ctypes_definitions)]
#[deny(unsafe_op_in_unsafe_fn)]
pub unsafe extern "C" fn scale(
    values: *const f64,
    out: *mut f64,
    count: u32,
    unit: *const ::core::ffi::c_char,
    unit_len: usize,
    text: *mut c_char,
    text_len: usize,
) -> i64 {
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn __callgate_body(
        values: &[f64],
        out: &mut [f64],
        count: u32,
        unit: Option<&str>,
        mut text: OutBuf<'_, c_char>,
    ) -> i64 {
        let _ = &count;
        {
            for (out, value) in out.iter_mut().zip(values) {
                *out = value * 2.0;
            }
            write!(text, "{} {}", values.len(), unit.unwrap_or(""));
            text.required() as i64
        }
    }
    static __CALLGATE_SITE: ::callgate::__private::Site = ::callgate::__private::Site {
        name: "scale",
        attach: ::callgate::__private::Attach::Bound,
        gate: ::callgate::__private::GatePolicy::Wait,
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 236> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0export\0scale\0int64_t @(const double *values, double *out, uint32_t count, const char *unit, size_t unit_len, char *text, size_t text_len)\0\0Scales `values` into `out` (`count` of each) and describes them.\0\0callgate-end\0\0",
    );
    #[allow(dead_code)]
    const _: () = {
        const _: () = {
            #[deny(improper_ctypes_definitions)]
            extern "C" fn __callgate_element(_: f64) {}
        };
        const _: () = {
            #[deny(improper_ctypes_definitions)]
            extern "C" fn __callgate_element(_: f64) {}
        };
        const _: () = {
            #[deny(improper_ctypes_definitions)]
            extern "C" fn __callgate_element(_: c_char) {}
        };
    };
    let __callgate_on_error = || -> i64 { -1 };
    ::callgate::__private::call(
        &__CALLGATE_SITE,
        __callgate_on_error,
        __callgate_on_error,
        move |_: &::callgate::__private::Frame| {
            ::callgate::__private::check_disjoint(
                &[
                    ::callgate::__private::Region::values(
                        values as *const f64,
                        ::callgate::__private::len_arg(count, "count")?,
                        false,
                        "values",
                    ),
                    ::callgate::__private::Region::values(
                        out as *const f64,
                        ::callgate::__private::len_arg(count, "count")?,
                        true,
                        "out",
                    ),
                    ::callgate::__private::Region::values(unit, unit_len, false, "unit"),
                    ::callgate::__private::Region::values(
                        text as *const c_char,
                        text_len,
                        true,
                        "text",
                    ),
                ],
            )?;
            let values = unsafe {
                ::callgate::__private::slice_arg(
                    values,
                    ::callgate::__private::len_arg(count, "count")?,
                    "values",
                )
            }?;
            {
                #[allow(unused_imports)]
                use ::callgate::__private::{CheckedStored as _, UncheckedStored as _};
                {
                    let __callgate_stored = &values;
                    unsafe {
                        (&::callgate::__private::Stored::<f64>::new())
                            .check(
                                __callgate_stored.as_ptr(),
                                __callgate_stored.len(),
                                "values",
                            )
                    }?;
                }
            }
            let out = unsafe {
                ::callgate::__private::mut_slice_arg(
                    out,
                    ::callgate::__private::len_arg(count, "count")?,
                    "out",
                )
            }?;
            {
                #[allow(unused_imports)]
                use ::callgate::__private::{CheckedStored as _, UncheckedStored as _};
                {
                    let __callgate_stored = &out;
                    unsafe {
                        (&::callgate::__private::Stored::<f64>::new())
                            .check(
                                __callgate_stored.as_ptr(),
                                __callgate_stored.len(),
                                "out",
                            )
                    }?;
                }
            }
            let unit = unsafe {
                ::callgate::__private::opt_str_len_arg(unit, unit_len, "unit")
            }?;
            let text = unsafe {
                ::callgate::__private::out_text_arg(text, text_len, "text")
            }?;
            ::callgate::__private::ok(__callgate_body(values, out, count, unit, text))
        },
    )
}
/// `name`, owned by C until it frees it.
///
/// # Safety
///
/// Each pointer argument is NULL or valid for the duration of the call.
#[unsafe(no_mangle)]
#[deny(improper_ctypes_definitions)]
#[deny(unsafe_op_in_unsafe_fn)]
pub unsafe extern "C" fn name(
    bytes: *const u8,
    bytes_len: usize,
) -> <Option<CString> as ::callgate::__private::OwnedValue>::Raw {
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn __callgate_body(bytes: &[u8]) -> Option<CString> {
        CString::new(bytes).ok()
    }
    static __CALLGATE_SITE: ::callgate::__private::Site = ::callgate::__private::Site {
        name: "name",
        attach: ::callgate::__private::Attach::Bound,
        gate: ::callgate::__private::GatePolicy::Wait,
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 188> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0export\0name\0char *@(const uint8_t *bytes, size_t bytes_len)\0\0`name`, owned by C until it frees it.\n\nFree the result with `data_string_free`.\0data_string_free\0callgate-end\0",
    );
    const _: () = <data_string_free as ::callgate::__private::Frees<
        <Option<CString> as ::callgate::__private::Owned>::Freed,
    >>::FREES;
    #[allow(dead_code)]
    const _: () = {
        const _: () = {
            #[deny(improper_ctypes_definitions)]
            extern "C" fn __callgate_element(_: u8) {}
        };
    };
    ::callgate::__private::call(
        &__CALLGATE_SITE,
        || <Option<CString> as ::callgate::__private::OwnedValue>::NULL,
        || <Option<CString> as ::callgate::__private::OwnedValue>::NULL,
        move |_: &::callgate::__private::Frame| {
            let bytes = unsafe {
                ::callgate::__private::slice_arg(bytes, bytes_len, "bytes")
            }?;
            {
                #[allow(unused_imports)]
                use ::callgate::__private::{CheckedStored as _, UncheckedStored as _};
                {
                    let __callgate_stored = &bytes;
                    unsafe {
                        (&::callgate::__private::Stored::<u8>::new())
                            .check(
                                __callgate_stored.as_ptr(),
                                __callgate_stored.len(),
                                "bytes",
                            )
                    }?;
                }
            }
            ::callgate::__private::ok(__callgate_body(bytes))
                .map(::callgate::__private::owned_value)
        },
    )
}
/// `count` copies of `byte`, owned by C until it frees them.
///
/// # Safety
///
/// Each pointer argument is NULL or valid for the duration of the call.
#[unsafe(no_mangle)]
#[deny(improper_ctypes_definitions)]
#[deny(unsafe_op_in_unsafe_fn)]
pub unsafe extern "C" fn repeat(
    byte: u8,
    count: usize,
    result_len: *mut usize,
) -> *mut <Vec<u8> as ::callgate::__private::OwnedSlice>::Elem {
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn __callgate_body(byte: u8, count: usize) -> Vec<u8> {
        vec![byte; count]
    }
    static __CALLGATE_SITE: ::callgate::__private::Site = ::callgate::__private::Site {
        name: "repeat",
        attach: ::callgate::__private::Attach::Bound,
        gate: ::callgate::__private::GatePolicy::Wait,
        on_panic: ::callgate::__private::OnFailure::Abort,
        on_error: ::callgate::__private::OnFailure::Abort,
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 268> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0export\0repeat\0uint8_t *@(uint8_t byte, size_t count, size_t *result_len)\0\0`count` copies of `byte`, owned by C until it frees them.\n\nIts length is stored in `*result_len`; free it with\n`data_bytes_free(result, length)`.\0data_bytes_free\0callgate-end\0\0\0",
    );
    const _: () = <data_bytes_free as ::callgate::__private::Frees<
        <Vec<u8> as ::callgate::__private::Owned>::Freed,
    >>::FREES;
    #[allow(dead_code)]
    const _: () = {
        const _: () = {
            #[deny(improper_ctypes_definitions)]
            extern "C" fn __callgate_element(_: u8) {}
        };
    };
    ::callgate::__private::call(
        &__CALLGATE_SITE,
        || ::core::unreachable!("callgate aborts instead"),
        || ::core::unreachable!("callgate aborts instead"),
        move |_: &::callgate::__private::Frame| {
            let __callgate_result_len = unsafe {
                ::callgate::__private::result_len_arg(result_len, "result_len")
            }?;
            ::callgate::__private::ok(__callgate_body(byte, count))
                .map(|value| ::callgate::__private::owned_slice(
                    value,
                    __callgate_result_len,
                ))
        },
    )
}
