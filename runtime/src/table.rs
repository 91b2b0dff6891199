//! `export_table!`: the function pointers of `local` callbacks, exported as
//! one read-only struct C can reach.

/// Exports a table of `local` callbacks: a `#[repr(C)]` struct with one
/// function pointer per callback, as a read-only exported symbol, so a C
/// host gets the pointers a C API wants (a comparator, a `sqlite3`
/// function, a thread-pool job) without a hand-written getter callback.
///
/// ```
/// use callgate::c_callback;
/// use std::ffi::{c_int, c_void};
///
/// /// Orders two `int`s.
/// #[c_callback(local, on_panic = 0)]
/// fn doc_ascending(a: &c_int, b: &c_int) -> c_int {
///     a.cmp(b) as c_int
/// }
///
/// /// Counts calls in the `unsigned` user data points to.
/// #[c_callback(local)]
/// fn doc_count(#[user_data] calls: &mut u32) {
///     *calls += 1;
/// }
///
/// callgate::export_table! {
///     /// What the host hands to its C APIs.
///     pub static doc_callbacks: DocCallbacks {
///         doc_ascending,
///         doc_count,
///     }
/// }
///
/// // What a C host sees (through `dlsym(lib, "doc_callbacks")` or the
/// // generated header's `extern const DocCallbacks doc_callbacks;`):
/// let table: &DocCallbacks = &doc_callbacks;
/// let mut calls = 0_u32;
/// // SAFETY: valid pointers, as C passes them.
/// unsafe {
///     assert_eq!((table.doc_ascending)(&1, &2), -1);
///     (table.doc_count)((&raw mut calls).cast::<c_void>());
/// }
/// assert_eq!(calls, 1);
/// ```
///
/// `export_table! { $vis static NAME: Type { callback, path::to::callback, … } }`
/// declares the struct `Type` (each field is named after its callback and
/// has its function-pointer type) and exports the static `NAME` under that
/// symbol. Each entry must be a `#[c_callback(local)]` fn without lifetime
/// parameters; anything else is a type error at the entry. Doc comments
/// and `#[cfg]` before `static` apply to the table.
///
/// The generated header declares the struct, with each field's type the
/// callback's `name_fn` typedef, and `extern const Type NAME;`:
///
/// ```c
/// typedef struct DocCallbacks {
///     doc_ascending_fn doc_ascending;
///     doc_count_fn doc_count;
/// } DocCallbacks;
/// extern const DocCallbacks doc_callbacks;
/// ```
///
/// Reading the table calls nothing: it does not attach the thread (no
/// bind in [`stats()`](crate::stats())); the callbacks themselves are full
/// `#[c_callback]`s.
#[macro_export]
macro_rules! export_table {
    ($($declaration:tt)*) => {
        $crate::__private::export_table_impl! { $crate; $($declaration)* }
    };
}
