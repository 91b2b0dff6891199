//! `#[local]` values: per-thread state a callback receives as `&mut T`
//! without it being part of the C signature.
//!
//! Every `Local` type gets a small index, the same for every callback of
//! this copy of the runtime ([`registry`]); each context keeps its values
//! in a table at those indices ([`Locals`]), and a callback finds its
//! index in a [`LocalKey`] `static`.
//!
//! A call holds the value it took, so a nested call cannot take it too:
//! the fast path's outermost call on an idle context in the context's
//! entry word ([`Locals::get_ready`], [`holding`]; functions that must
//! know whether a value is free take that index as `held`), any other call
//! in the slot's state word with who it is ([`Holder`]), until its
//! [`LocalRef`] drops or a later lookup finds it gone.
//!
//! Only the registry and the keys are shared between threads.

mod borrow;
mod holder;
mod key;
mod lookup;
mod registry;
mod release;
mod slot;
mod table;
#[cfg(test)]
mod tests;

pub use borrow::LocalRef;
pub(crate) use holder::Holder;
pub use key::LocalKey;
pub(crate) use key::{held_in, holding};
// Only the ELF unload hook (Linux, Android) frees the registry.
#[cfg_attr(
    not(any(target_os = "linux", target_os = "android")),
    allow(unused_imports)
)]
pub(crate) use registry::free_registry;
pub(crate) use table::Locals;

/// Per-thread state for `#[local]` callback parameters.
///
/// Each thread context owns at most one value of each `Local` type, created
/// with [`Default`] on the first call that asks for it. Contexts are recycled
/// when threads exit, so **a value created for one thread may later serve
/// another**: [`bind`](Local::bind) runs whenever the value starts serving a
/// thread and [`release`](Local::release) when that thread lets go of it (it
/// exited, or an `attach = per_call` callback returned).
///
/// ```
/// #[derive(Default)]
/// struct Scratch {
///     buf: Vec<f64>,
/// }
///
/// impl callgate::Local for Scratch {
///     fn release(&mut self) {
///         // Keep the allocation for the next thread, drop the contents.
///         self.buf.clear();
///     }
/// }
/// ```
///
/// A panic in `default`, `bind` or `release` never unwinds into C: in a call
/// it becomes that call's panic fallback; in `release` (which runs outside any
/// call) the value is dropped and the message written to standard error.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a `#[local]` parameter: it does not implement `callgate::Local`",
    label = "not a `callgate::Local` type",
    note = "implement it: `impl callgate::Local for {Self} {{}}` (with `Default`, `Send` and \
            `'static`, which it requires)"
)]
pub trait Local: Default + Send + 'static {
    /// The value is about to serve the calling thread (for example: attach
    /// that thread to a JVM). Runs on that thread, inside the first call that
    /// uses the value after the thread was bound.
    fn bind(&mut self) {}

    /// The thread the value served let go of it: it exited, or an
    /// `attach = per_call` callback returned. Runs on that thread.
    fn release(&mut self) {}
}
