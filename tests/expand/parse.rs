// The expansion snapshot's input: one callback that shows every kind of
// parameter mapping, and an init function. `parse.expanded.rs` beside it is
// what the macros make of it (checked by callgate-macros' unit tests).

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
#[c_callback(on_error = -1, on_panic = -2, gate = fail)]
pub fn parse(
    text: &CStr,
    out: &mut f64,
    unit: Option<&str>,
    #[local] buf: &mut Scratch,
) -> Result<i32, ParseError> {
    buf.text.clear();
    buf.text.push_str(text.to_str().map_err(|_| ParseError)?);
    *out = buf.text.trim().parse().map_err(|_| ParseError)?;
    if unit == Some("%") {
        *out /= 100.0;
    }
    Ok(0)
}

#[callgate::init]
fn setup() -> Result<(), ParseError> {
    Ok(())
}
