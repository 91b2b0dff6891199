//! `cfg` predicates for the target families the generated code cares about.

use proc_macro2::TokenStream;
use quote::quote;

/// Targets whose object format is ELF: load-time constructors go in
/// `.init_array`, and callback records in their own section.
pub(crate) fn elf() -> TokenStream {
    quote! {
        any(
            target_os = "linux",
            target_os = "android",
            target_os = "freebsd",
            target_os = "netbsd",
            target_os = "openbsd",
            target_os = "dragonfly",
            target_os = "illumos",
            target_os = "solaris",
        )
    }
}
