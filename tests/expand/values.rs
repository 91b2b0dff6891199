// The expansion snapshot of parameters passed by value that C may pass
// invalid: a `#[derive(CEnum)]` enum arrives as its repr's integer and is
// checked, a `#[derive(CValue)]` struct and plain integers arrive as they
// are; `Flags` names the runtime through a re-export. `values.expanded.rs`
// beside it is what the macros make of it (checked by callgate-macros' unit
// tests).

use callgate::{CEnum, CValue, c_callback};

#[derive(Clone, Copy, CEnum)]
#[repr(i32)]
pub enum Mode {
    Read = -1,
    Write = 4,
}

#[derive(Clone, Copy, CValue)]
#[repr(C)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}

mod runtime {
    pub use callgate::*;
}

#[derive(Clone, Copy, CValue)]
#[callgate(crate = runtime)]
#[repr(transparent)]
pub struct Flags(pub u32);

/// Opens `span` in `mode`; -1 for a mode C passed that is no `Mode`.
#[c_callback(on_error = -1)]
pub fn open(mode: Mode, span: Span, flags: i32) -> i32 {
    flags + span.len as i32 + mode as i32
}
