use callgate::{CEnum, CValue, c_callback};
#[derive(Clone, Copy, CEnum)]
#[repr(i32)]
pub enum Mode {
    Read = -1,
    Write = 4,
}
const _: () = {
    const __CALLGATE_PIECES: &[::callgate::__private::RecordPiece] = &[
        ::callgate::__private::RecordPiece::Text(
            b"\0callgate-decl\x002\0enum\0Mode\0int32_t\x1FMODE_READ=",
        ),
        ::callgate::__private::RecordPiece::Int((Mode::Read) as i128),
        ::callgate::__private::RecordPiece::Text(b"\x1FMODE_WRITE="),
        ::callgate::__private::RecordPiece::Int((Mode::Write) as i128),
        ::callgate::__private::RecordPiece::Text(b"\0\0\0\0callgate-end\0"),
    ];
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<
        12,
        { ::callgate::__private::record_len(__CALLGATE_PIECES) },
    > = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        ::callgate::__private::record_bytes(__CALLGATE_PIECES),
    );
};
impl ::callgate::__private::CArg for Mode {
    type Raw = i32;
    #[inline(always)]
    fn from_c(
        __callgate_raw: i32,
        __callgate_name: &'static str,
    ) -> ::core::result::Result<Self, ::callgate::__private::Failure> {
        const __CALLGATE_VARIANT_0: i32 = Mode::Read as i32;
        const __CALLGATE_VARIANT_1: i32 = Mode::Write as i32;
        match __callgate_raw {
            __CALLGATE_VARIANT_0 => ::core::result::Result::Ok(Mode::Read),
            __CALLGATE_VARIANT_1 => ::core::result::Result::Ok(Mode::Write),
            _ => {
                ::core::result::Result::Err(
                    ::callgate::__private::not_a_variant(
                        __callgate_name,
                        "Mode",
                        __callgate_raw,
                        &[__CALLGATE_VARIANT_0, __CALLGATE_VARIANT_1],
                    ),
                )
            }
        }
    }
}
#[derive(Clone, Copy, CValue)]
#[repr(C)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}
const _: () = {
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 76> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0struct\0Span\0uint32_t start\x1Fuint32_t len\0\0\0\0callgate-end\0\0\0\0",
    );
};
unsafe impl ::callgate::CValue for Span
where
    u32: ::callgate::CValue,
    u32: ::callgate::CValue,
{}
mod runtime {
    pub use callgate::*;
}
#[derive(Clone, Copy, CValue)]
#[callgate(crate = runtime)]
#[repr(transparent)]
pub struct Flags(pub u32);
const _: () = {
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
    static __CALLGATE_DECL: runtime::__private::DeclNote<12, 60> = runtime::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0typedef\0Flags\0uint32_t @\0\0\0\0callgate-end\0\0\0",
    );
};
unsafe impl runtime::CValue for Flags
where
    u32: runtime::CValue,
{}
/// Opens `span` in `mode`; -1 for a mode C passed that is no `Mode`.
#[unsafe(no_mangle)]
#[deny(improper_ctypes_definitions)]
pub extern "C" fn open(
    mode: <Mode as ::callgate::__private::CArg>::Raw,
    span: <Span as ::callgate::__private::CArg>::Raw,
    flags: i32,
) -> i32 {
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn __callgate_body(mode: Mode, span: Span, flags: i32) -> i32 {
        flags + span.len as i32 + mode as i32
    }
    static __CALLGATE_SITE: ::callgate::__private::Site = ::callgate::__private::Site {
        name: "open",
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
    static __CALLGATE_DECL: ::callgate::__private::DeclNote<12, 168> = ::callgate::__private::DeclNote::new(
        9,
        0x1644743,
        *b"callgate\0\0\0\0",
        *b"\0callgate-decl\x002\0export\0open\0int32_t @(Mode mode, Span span, int32_t flags)\0Mode Span\0Opens `span` in `mode`; -1 for a mode C passed that is no `Mode`.\0\0callgate-end\0\0\0",
    );
    let __callgate_on_error = || -> i32 { -1 };
    ::callgate::__private::call(
        &__CALLGATE_SITE,
        __callgate_on_error,
        __callgate_on_error,
        move |_: &::callgate::__private::Frame| {
            let mode = <Mode as ::callgate::__private::CArg>::from_c(mode, "mode")?;
            let span = <Span as ::callgate::__private::CArg>::from_c(span, "span")?;
            ::callgate::__private::ok(__callgate_body(mode, span, flags))
        },
    )
}
