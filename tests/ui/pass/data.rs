// Every data mapping: slices, `#[len]`, `OutBuf`, owned results and their
// free functions.
use callgate::{OutBuf, c_callback};
use std::ffi::{CString, c_char, c_int};

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

pub struct Session {
    pub id: u64,
}

mod free {
    use std::ffi::CString;

    callgate::export_free!(pub string_free: CString);
    callgate::export_free!(pub(crate) points_free: Box<[super::Point]>);
}

callgate::export_free!(
    /// Frees a session.
    session_free: Box<Session>
);
callgate::export_free!(bytes_free: Vec<u8>);

#[c_callback(on_panic = 0.0)]
pub fn slices(
    a: &[f64],
    b: &mut [Point],
    c: Option<&[u8]>,
    d: Option<&mut [u32]>,
    _: &[i8],
) -> f64 {
    let _ = (b, c, d);
    a.iter().sum()
}

#[c_callback(on_panic = 0)]
pub fn lengths(
    #[len = n] a: &[u8],
    // C: `const Point **b`, as C declares arrays of pointers.
    #[len = m] b: &[*const Point],
    n: u32,
    m: c_int,
    #[len = k] c: &mut [u16],
    k: i64,
) -> usize {
    a.len() + b.len() + c.len()
}

#[c_callback(on_panic = 0)]
pub fn texts(#[len] a: &str, #[len] b: Option<&str>, #[len = size] c: &str, size: usize) -> usize {
    a.len() + b.map_or(0, str::len) + c.len()
}

#[c_callback(on_panic = 0)]
pub fn buffers(mut text: OutBuf<'_, c_char>, mut bytes: OutBuf<'_, u8>, #[len = cap] mut points: OutBuf<'_, Point>, cap: u32) -> usize {
    write!(text, "{}", 42);
    bytes.extend_from_slice(b"42");
    points.push(Point { x: 1.0, y: 2.0 });
    text.required() + bytes.required() + points.required()
}

#[c_callback(free = free::string_free)]
pub fn string() -> CString {
    CString::new("hello").unwrap()
}

#[c_callback(free = crate::free::string_free, on_error = abort)]
pub fn maybe_string(really: bool) -> Result<Option<CString>, std::ffi::NulError> {
    really.then(|| CString::new("maybe")).transpose()
}

#[c_callback(free = session_free)]
pub fn session() -> Option<Box<Session>> {
    Some(Box::new(Session { id: 1 }))
}

#[c_callback(free = bytes_free)]
pub fn bytes() -> Vec<u8> {
    vec![1, 2, 3]
}

#[c_callback(free = bytes_free)]
pub fn boxed_bytes() -> Option<Box<[u8]>> {
    None
}

#[c_callback(free = free::points_free)]
pub fn points() -> Box<[Point]> {
    Box::new([Point { x: 0.0, y: 0.0 }])
}

#[c_callback(local, free = session_free)]
fn make_session(id: u64) -> Box<Session> {
    Box::new(Session { id })
}

fn main() {
    // SAFETY: every pointer is NULL with length 0, or valid for its length.
    unsafe {
        let values = [1.0, 2.0];
        assert_eq!(
            slices(values.as_ptr(), 2, std::ptr::null_mut(), 0, std::ptr::null(), 0, std::ptr::null_mut(), 0, std::ptr::null(), 0),
            3.0
        );
        assert_eq!(lengths(b"ab".as_ptr(), std::ptr::null_mut(), 2, 0, std::ptr::null_mut(), 0), 2);
        assert_eq!(texts(c"ab".as_ptr(), 2, std::ptr::null(), 0, c"c".as_ptr(), 1), 3);
        let mut text = [0 as c_char; 2];
        let mut point = Point { x: 0.0, y: 0.0 };
        assert_eq!(buffers(text.as_mut_ptr(), 2, std::ptr::null_mut(), 0, &mut point, 1), 5);
        assert_eq!(point.x, 1.0);

        free::string_free(string());
        free::string_free(maybe_string(false));
        let session = session();
        assert_eq!((*session).id, 1);
        session_free(session);
        session_free(make_session(2));
        let mut len = 0;
        let ptr = bytes(&mut len);
        assert_eq!(len, 3);
        bytes_free(ptr, len);
        assert!(boxed_bytes(&mut len).is_null());
        let ptr = points(&mut len);
        free::points_free(ptr, len);
    }
}
