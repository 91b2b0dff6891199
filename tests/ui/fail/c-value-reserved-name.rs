#[allow(non_camel_case_types)]
#[derive(Clone, Copy, callgate::CValue)]
#[repr(C)]
pub struct wchar_t {
    pub code: u32,
}

fn main() {}
