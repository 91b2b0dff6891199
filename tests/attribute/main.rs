//! `#[c_callback]` as users write it, called from C in this process
//! (`tests/c/macros_*.c`): one module per topic. The attribute's tests that
//! need a process of their own (an init, the gate) are the `macros_*`
//! binaries beside this one.

mod abort;
mod attach;
mod data;
mod locals;
mod mappings;
mod symbols;
mod user_data;
mod values;
