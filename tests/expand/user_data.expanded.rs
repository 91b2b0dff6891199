use callgate::c_callback;
use std::ffi::{c_int, c_void};
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
    #[inline(always)]
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
        on_panic: ::callgate::__private::Policy::Return,
        on_error: ::callgate::__private::Policy::Return,
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
            let order = unsafe {
                ::callgate::__private::user_data_mut::<Order>(order, "order")
            }?;
            ::callgate::__private::ok(__callgate_body(a, b, order))
        },
    )
}
