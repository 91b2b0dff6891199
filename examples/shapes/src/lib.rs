//! The `shapes` example: a C library written in Rust.
//!
//! `cargo callgate install --prefix DIR -p callgate-example-shapes` builds
//! it and installs `libshapes.so` (with its soname), `shapes.h` and
//! `shapes.pc`; a C program then builds with
//! `cc demo.c $(pkg-config --cflags --libs shapes)`. `include/shapes.h` is
//! the committed header, checked by
//! `cargo callgate check examples/shapes/include/shapes.h -p callgate-example-shapes --cxx-owners`.
//!
//! The header defines every type below: `Fill` as a `uint8_t` with
//! `FILL_NONE` …, `Point`, `Rect` (two `Point`s by value) and `Order`. The
//! comparator takes typed references where `qsort_r` passes
//! `const void *`. The strings and arrays it returns come back to
//! `shapes_string_free` and `shapes_rects_free`, which the C++ owners
//! (`--cxx-owners`) call for you. `c/demo.c` and `c/demo.cc` use it all.

use std::ffi::{CString, c_int};

use callgate::{CEnum, CValue, c_callback};

// `shapes_last_error_length`, `shapes_last_error_message`,
// `shapes_clear_last_error`.
callgate::export_error_api!(shapes);

/// How a shape is drawn inside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, CEnum)]
#[repr(u8)]
pub enum Fill {
    /// Outline only.
    None,
    /// One colour.
    Solid,
    /// Parallel lines.
    Hatched = 4,
}

/// A point of the plane.
#[derive(Clone, Copy, Debug, PartialEq, CValue)]
#[repr(C)]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// An axis-aligned rectangle: its corners, lowest first.
#[derive(Clone, Copy, Debug, PartialEq, CValue)]
#[repr(C)]
pub struct Rect {
    /// The corner with the lowest coordinates.
    pub min: Point,
    /// The opposite corner.
    pub max: Point,
}

/// How `shapes_compare_area` orders: by area, growing (`direction` 1) or
/// shrinking (-1).
#[derive(Clone, Copy, Debug, CValue)]
#[repr(C)]
pub struct Order {
    pub direction: i32,
}

impl Rect {
    fn width(&self) -> f64 {
        self.max.x - self.min.x
    }

    fn height(&self) -> f64 {
        self.max.y - self.min.y
    }

    fn area(&self) -> f64 {
        self.width() * self.height()
    }
}

// `void shapes_string_free(char *value)` and
// `void shapes_rects_free(Rect *ptr, size_t len)`.
callgate::export_free!(pub shapes_string_free: CString);
callgate::export_free!(pub shapes_rects_free: Vec<Rect>);

/// The area of `rect`; -1 if its corners are not in order.
#[c_callback(on_error = -1.0)]
fn shapes_area(rect: Rect) -> Result<f64, String> {
    if rect.width() < 0.0 || rect.height() < 0.0 {
        return Err(format!("the corners of {rect:?} are not in order"));
    }
    Ok(rect.area())
}

/// Orders two elements of an array of `Rect` by area, as `order` says: a
/// comparator for `qsort_r` (glibc's argument order). NULL or misaligned
/// elements compare equal and set the last error.
#[c_callback(on_error = 0, on_panic = 0)]
fn shapes_compare_area(#[void] a: &Rect, #[void] b: &Rect, #[user_data] order: &Order) -> c_int {
    let ordering = a.area().total_cmp(&b.area()) as c_int;
    ordering * order.direction.signum()
}

/// A sentence describing `rect` drawn with `fill`; NULL if `rect` is NULL
/// or `fill` is no `Fill`.
#[c_callback(free = shapes_string_free)]
fn shapes_describe(rect: &Rect, fill: Fill) -> CString {
    let fill = match fill {
        Fill::None => "outlined",
        Fill::Solid => "solid",
        Fill::Hatched => "hatched",
    };
    let text = format!(
        "a {fill} {} by {} rectangle at ({}, {})",
        rect.width(),
        rect.height(),
        rect.min.x,
        rect.min.y
    );
    CString::new(text).expect("no NUL in a formatted number")
}

/// `columns` × `rows` squares of side `size`, row by row from the origin;
/// its length is stored in `*result_len`. NULL (and length 0) for a side
/// that is not positive.
#[c_callback(free = shapes_rects_free)]
fn shapes_grid(columns: u32, rows: u32, size: f64) -> Result<Vec<Rect>, String> {
    if size.is_nan() || size <= 0.0 {
        return Err(format!("the side {size} is not positive"));
    }
    let mut rects = Vec::new();
    for row in 0..rows {
        for column in 0..columns {
            let min = Point {
                x: f64::from(column) * size,
                y: f64::from(row) * size,
            };
            let max = Point {
                x: min.x + size,
                y: min.y + size,
            };
            rects.push(Rect { min, max });
        }
    }
    Ok(rects)
}
