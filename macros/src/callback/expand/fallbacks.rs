//! What the trampoline returns to C when the body fails or panics: the
//! `on_error` / `on_panic` closures, and the policies its `Site` records.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::Ident;

use crate::callback::attr::{Fallback, Options};

/// The `on_error` / `on_panic` closures and the policies the `Site` records.
pub(super) struct Fallbacks {
    /// `let` statements defining the closures.
    pub(super) setup: TokenStream,
    pub(super) on_error: TokenStream,
    pub(super) on_panic: TokenStream,
    pub(super) error_policy: TokenStream,
    pub(super) panic_policy: TokenStream,
}

impl Fallbacks {
    /// `c_return` is the C return type (`None` for `()`), `default` the
    /// fallback closure when neither `on_error` nor `on_panic` is given.
    pub(super) fn new(
        options: &Options,
        c_return: Option<&TokenStream>,
        default: TokenStream,
    ) -> Self {
        let on_error = Ident::new("__callgate_on_error", Span::mixed_site());
        let on_panic = Ident::new("__callgate_on_panic", Span::mixed_site());
        let ret = match c_return {
            Some(ty) => ty.clone(),
            None => quote!(()),
        };
        let value = |ident: &Ident, expr: &dyn ToTokens| quote!(let #ident = || -> #ret { #expr };);
        let unreachable = quote!(|| ::core::unreachable!("callgate aborts instead"));
        let (abort, ret_policy) = (quote!(Abort), quote!(Return));
        match (&options.on_error, &options.on_panic) {
            (Some(Fallback::Value(error)), Some(Fallback::Value(panic))) => {
                let mut setup = value(&on_error, error);
                setup.extend(value(&on_panic, panic));
                Fallbacks {
                    setup,
                    on_error: on_error.to_token_stream(),
                    on_panic: on_panic.to_token_stream(),
                    error_policy: ret_policy.clone(),
                    panic_policy: ret_policy,
                }
            }
            (Some(Fallback::Value(error)), Some(Fallback::Abort)) => Fallbacks {
                setup: value(&on_error, error),
                on_error: on_error.to_token_stream(),
                on_panic: unreachable,
                error_policy: ret_policy,
                panic_policy: abort,
            },
            (Some(Fallback::Abort), Some(Fallback::Value(panic))) => Fallbacks {
                setup: value(&on_panic, panic),
                on_error: unreachable,
                on_panic: on_panic.to_token_stream(),
                error_policy: abort,
                panic_policy: ret_policy,
            },
            // One value serves both: a closure that captures nothing is `Copy`.
            (Some(Fallback::Value(shared)), None) | (None, Some(Fallback::Value(shared))) => {
                Fallbacks {
                    setup: value(&on_error, shared),
                    on_error: on_error.to_token_stream(),
                    on_panic: on_error.to_token_stream(),
                    error_policy: ret_policy.clone(),
                    panic_policy: ret_policy,
                }
            }
            (Some(Fallback::Abort), _) | (_, Some(Fallback::Abort)) => Fallbacks {
                setup: TokenStream::new(),
                on_error: unreachable.clone(),
                on_panic: unreachable,
                error_policy: abort.clone(),
                panic_policy: abort,
            },
            // Validation allows no fallback only for `()`, pointers and owned
            // results.
            (None, None) => Fallbacks {
                setup: TokenStream::new(),
                on_error: default.clone(),
                on_panic: default,
                error_policy: ret_policy.clone(),
                panic_policy: ret_policy,
            },
        }
    }
}
