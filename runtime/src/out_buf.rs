//! [`OutBuf`]: a buffer C lends a callback to write into, `snprintf` style.

use core::ffi::c_char;
use core::fmt;
use core::mem::MaybeUninit;

use crate::failure::Failure;
use crate::slice::checked_start;

/// A buffer the C caller lends a callback to write into: the parameter
/// `out: OutBuf<'_, T>` is `T *out, size_t out_len` in C.
///
/// Writes behave like `snprintf`: what fits is written, what does not is
/// counted, and [`required`](OutBuf::required) tells the callback how many
/// elements a large enough buffer needs — the value to return to C, so the
/// caller can retry with a bigger buffer. `(NULL, 0)` is a buffer of
/// capacity 0 (C asking only for the size); NULL with a non-zero length, a
/// misaligned pointer or an impossible length is an error naming the
/// argument, before the body runs.
///
/// An `OutBuf<'_, c_char>` (C's `char *`) holds **text**: it is
/// NUL-terminated from the start, every write keeps it NUL-terminated, and
/// the text takes at most `capacity() - 1` bytes. Write to it with
/// `write!`, [`write_str`](OutBuf::write_str), or anything that takes a
/// [`fmt::Write`]. Other element types are filled to the last element.
///
/// ```
/// use callgate::{OutBuf, c_callback};
/// use std::ffi::c_char;
///
/// /// C: `size_t doc_greet(const char *name, char *out, size_t out_len);`
/// /// Returns the length of the whole greeting, like `snprintf`.
/// #[c_callback(on_error = 0)]
/// fn doc_greet(name: &str, mut out: OutBuf<'_, c_char>) -> usize {
///     write!(out, "hello, {name}");
///     out.required()
/// }
///
/// let mut buf = [0 as c_char; 8];
/// // SAFETY: a C string, and a buffer of `buf.len()` chars.
/// let needed = unsafe { doc_greet(c"world".as_ptr(), buf.as_mut_ptr(), buf.len()) };
/// assert_eq!(needed, 12);
/// // SAFETY: the text is NUL-terminated.
/// assert_eq!(unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }, c"hello, ");
/// ```
pub struct OutBuf<'a, T> {
    buf: &'a mut [MaybeUninit<T>],
    /// Elements the content may occupy: the capacity, less one for the NUL
    /// of a text buffer.
    limit: usize,
    /// Elements written (a prefix of `buf`).
    written: usize,
    /// Elements the body asked to write, written or not.
    required: usize,
    /// A text buffer: the element after the content is a NUL.
    text: bool,
}

impl<'a, T> OutBuf<'a, T> {
    /// # Safety
    ///
    /// As `slice::mut_slice_arg`, for uninitialised elements.
    #[hot_path]
    unsafe fn from_c(
        p: *mut T,
        len: usize,
        name: &'static str,
        text: bool,
    ) -> Result<OutBuf<'a, T>, Failure> {
        let start = checked_start(p, len, name)?;
        // SAFETY: non-null, aligned and of a size that fits (checked); the
        // caller lends the `len` elements exclusively for 'a (caller
        // obligation); `MaybeUninit` accepts whatever bytes they hold.
        let buf = unsafe {
            core::slice::from_raw_parts_mut(start.as_ptr().cast::<MaybeUninit<T>>(), len)
        };
        let limit = if text { len.saturating_sub(1) } else { len };
        let mut out = OutBuf {
            buf,
            limit,
            written: 0,
            required: 0,
            text,
        };
        out.terminate();
        Ok(out)
    }

    /// How many elements C's buffer holds (for text, including the NUL).
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// How many elements the writes so far needed — written or not; for
    /// text, the length without the NUL, like `snprintf`'s result. The
    /// buffer was large enough if this is at most
    /// [`capacity`](OutBuf::capacity) (for text: less than it).
    #[inline]
    pub fn required(&self) -> usize {
        self.required
    }

    /// Whether some write did not fit.
    #[inline]
    pub fn is_truncated(&self) -> bool {
        self.required > self.written
    }

    /// The elements written so far (for text, without the NUL).
    #[inline]
    pub fn written(&self) -> &[T] {
        // SAFETY: the first `written` elements were initialised by `push`
        // or `extend_from_slice`.
        unsafe { core::slice::from_raw_parts(self.buf.as_ptr().cast::<T>(), self.written) }
    }

    /// Room left for content.
    #[hot_path]
    fn room(&self) -> usize {
        self.limit - self.written
    }

    /// Puts the NUL after the content of a text buffer.
    #[hot_path]
    fn terminate(&mut self) {
        if self.text {
            if let Some(slot) = self.buf.get_mut(self.written) {
                // All-zero bytes: C's NUL (text buffers hold `c_char`s).
                *slot = MaybeUninit::zeroed();
            }
        }
    }
}

impl<T: Copy> OutBuf<'_, T> {
    /// Appends `value` if it fits; counts it in
    /// [`required`](OutBuf::required) either way.
    #[inline]
    pub fn push(&mut self, value: T) {
        self.extend_from_slice(core::slice::from_ref(&value));
    }

    /// Appends as many of `values` as fit; counts all of them in
    /// [`required`](OutBuf::required).
    #[inline]
    pub fn extend_from_slice(&mut self, values: &[T]) {
        self.required = self.required.saturating_add(values.len());
        let count = values.len().min(self.room());
        let start = self.written;
        for (slot, value) in self.buf[start..start + count].iter_mut().zip(values) {
            slot.write(*value);
        }
        self.written += count;
        self.terminate();
    }
}

impl OutBuf<'_, c_char> {
    /// Appends the bytes of `text` that fit, keeping the buffer
    /// NUL-terminated (text is cut at a byte, as `snprintf` cuts it); counts
    /// all of them in [`required`](OutBuf::required).
    #[inline]
    pub fn write_str(&mut self, text: &str) {
        if !self.text {
            self.start_text();
        }
        self.required = self.required.saturating_add(text.len());
        let count = text.len().min(self.room());
        let start = self.written;
        for (slot, byte) in self.buf[start..start + count].iter_mut().zip(text.bytes()) {
            slot.write(byte as c_char);
        }
        self.written += count;
        self.terminate();
    }

    /// A `c_char` buffer spelled another way (`i8`) becomes text at its
    /// first text write: from then on the last element is kept for the NUL.
    #[cold]
    fn start_text(&mut self) {
        self.text = true;
        self.limit = self.capacity().saturating_sub(1);
        self.written = self.written.min(self.limit);
    }

    /// Appends formatted text; what `write!(out, …)` calls. Truncation is
    /// not an error, so there is no `Result` to handle.
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) {
        // Only a `Display` impl that returns an error can make this fail;
        // the text up to that point is kept.
        let _ = fmt::Write::write_fmt(self, args);
    }
}

impl fmt::Write for OutBuf<'_, c_char> {
    /// As [`OutBuf::write_str`]; never fails.
    fn write_str(&mut self, text: &str) -> fmt::Result {
        OutBuf::write_str(self, text);
        Ok(())
    }
}

impl<T> fmt::Debug for OutBuf<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutBuf")
            .field("capacity", &self.capacity())
            .field("written", &self.written)
            .field("required", &self.required)
            .field("text", &self.text)
            .finish()
    }
}

/// An [`OutBuf`] of elements from a `T *` and a length.
///
/// # Safety
///
/// When `p` is non-null, aligned and `len` elements fit in memory, `p` must
/// be valid for writing `len` `T`s, which nothing else accesses for `'a`.
#[hot_path]
pub unsafe fn out_buf_arg<'a, T>(
    p: *mut T,
    len: usize,
    name: &'static str,
) -> Result<OutBuf<'a, T>, Failure> {
    // SAFETY: forwarded caller obligation.
    unsafe { OutBuf::from_c(p, len, name, false) }
}

/// A text [`OutBuf`] from a `char *` and its size in bytes: NUL-terminated
/// at once when it has room for the NUL.
///
/// # Safety
///
/// As [`out_buf_arg`].
#[hot_path]
pub unsafe fn out_text_arg<'a>(
    p: *mut c_char,
    len: usize,
    name: &'static str,
) -> Result<OutBuf<'a, c_char>, Failure> {
    // SAFETY: forwarded caller obligation.
    unsafe { OutBuf::from_c(p, len, name, true) }
}

#[cfg(test)]
mod tests;
