use callgate::c_callback;
use std::ffi::{c_int, c_void};
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct sqlite3_context {
    _opaque: [u8; 0],
}
#[allow(non_camel_case_types)]
#[repr(C)]
pub struct sqlite3_value {
    _opaque: [u8; 0],
}
unsafe extern "C" {
    fn sqlite3_user_data(ctx: *mut sqlite3_context) -> *mut c_void;
}
pub struct Order {
    pub descending: bool,
    pub comparisons: u64,
}
/// The function-pointer type of this `local` callback, for
/// `callgate::export_table!`.
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
pub type by_key = unsafe extern "C" fn(
    a: *const c_void,
    b: *const c_void,
    order: *mut ::core::ffi::c_void,
) -> c_int;
/// C: `int by_key(const void *a, const void *b, void *order);`
///
/// # Safety
///
/// Each pointer argument is NULL or valid for the duration of the call.
#[deny(improper_ctypes_definitions)]
#[deny(unsafe_op_in_unsafe_fn)]
pub unsafe extern "C" fn by_key(
    a: *const c_void,
    b: *const c_void,
    order: *mut ::core::ffi::c_void,
) -> c_int {
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn __callgate_body(a: *const c_void, b: *const c_void, order: &mut Order) -> c_int {
        let (a, b) = unsafe { (*a.cast::<c_int>(), *b.cast::<c_int>()) };
        order.comparisons += 1;
        let ordering = a.cmp(&b);
        (if order.descending { ordering.reverse() } else { ordering }) as c_int
    }
    static __CALLGATE_SITE: ::callgate::__private::Site = ::callgate::__private::Site {
        name: "by_key",
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 156> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0local\0by_key\0int @(const void *a, const void *b, void *order)\0\0C: `int by_key(const void *a, const void *b, void *order);`\0\0callgate-end\0\0\0",
    );
    let __callgate_on_error = || -> c_int { 0 };
    ::callgate::__private::call(
        &__CALLGATE_SITE,
        __callgate_on_error,
        __callgate_on_error,
        move |_: &::callgate::__private::Frame| {
            let _ = <Order as ::callgate::__private::ExclusiveUserData>::exclusive;
            let order = unsafe {
                ::callgate::__private::user_data_mut::<Order>(order, "order")
            }?;
            ::callgate::__private::ok(__callgate_body(a, b, order))
        },
    )
}
/// The function-pointer type of this `local` callback, for
/// `callgate::export_table!`.
#[doc(hidden)]
#[allow(non_camel_case_types, dead_code)]
pub type count_args = unsafe extern "C" fn(
    ctx: *mut sqlite3_context,
    argc: <c_int as ::callgate::__private::CArg>::Raw,
    args: *mut *mut sqlite3_value,
);
/// C: `void count_args(sqlite3_context *ctx, int argc, sqlite3_value **args);`
///
/// # Safety
///
/// Each pointer argument is NULL or valid for the duration of the call.
#[deny(improper_ctypes_definitions)]
#[deny(unsafe_op_in_unsafe_fn)]
pub unsafe extern "C" fn count_args(
    ctx: *mut sqlite3_context,
    argc: <c_int as ::callgate::__private::CArg>::Raw,
    args: *mut *mut sqlite3_value,
) {
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn __callgate_body(
        ctx: *mut sqlite3_context,
        argc: c_int,
        args: &[*mut sqlite3_value],
        order: &mut Order,
    ) {
        let _ = &argc;
        let _ = &ctx;
        {
            order.comparisons += args.len() as u64;
        }
    }
    static __CALLGATE_SITE: ::callgate::__private::Site = ::callgate::__private::Site {
        name: "count_args",
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 220> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0local\0count_args\0void @(sqlite3_context *ctx, int argc, sqlite3_value **args)\0*sqlite3_context *sqlite3_value\0C: `void count_args(sqlite3_context *ctx, int argc, sqlite3_value **args);`\0\0callgate-end\0\0\0\0",
    );
    #[allow(dead_code)]
    const _: () = {
        const _: () = {
            #[deny(improper_ctypes_definitions)]
            extern "C" fn __callgate_element(_: *mut sqlite3_value) {}
        };
    };
    ::callgate::__private::call(
        &__CALLGATE_SITE,
        || (),
        || (),
        move |_: &::callgate::__private::Frame| {
            let __callgate_user_data: *mut ::core::ffi::c_void = unsafe {
                sqlite3_user_data(ctx)
            };
            ::callgate::__private::check_disjoint(
                &[
                    ::callgate::__private::Region::values(
                        args as *const *mut sqlite3_value,
                        ::callgate::__private::len_arg(argc, "argc")?,
                        false,
                        "args",
                    ),
                    ::callgate::__private::Region::values(
                        __callgate_user_data.cast::<Order>().cast_const(),
                        1,
                        true,
                        "order",
                    ),
                ],
            )?;
            let argc = <c_int as ::callgate::__private::CArg>::from_c(argc, "argc")?;
            let args = unsafe {
                ::callgate::__private::slice_arg(
                    args.cast_const(),
                    ::callgate::__private::len_arg(argc, "argc")?,
                    "args",
                )
            }?;
            {
                #[allow(unused_imports)]
                use ::callgate::__private::{CheckedStored as _, UncheckedStored as _};
                {
                    let __callgate_stored = &args;
                    unsafe {
                        (&::callgate::__private::Stored::<*mut sqlite3_value>::new())
                            .check(
                                __callgate_stored.as_ptr(),
                                __callgate_stored.len(),
                                "args",
                            )
                    }?;
                }
            }
            let _ = <Order as ::callgate::__private::ExclusiveUserData>::exclusive;
            let order = unsafe {
                ::callgate::__private::user_data_mut::<
                    Order,
                >(__callgate_user_data, "order")
            }?;
            ::callgate::__private::ok(__callgate_body(ctx, argc, args, order))
        },
    )
}
