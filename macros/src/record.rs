//! Declaration records: the bytes that describe one C declaration to
//! `callgate-header` (laid out as `format` says), and the `#[used]` static
//! that puts them in the compiled library.
//!
//! rustc keeps a `#[used]` static in every object file, rlib, staticlib and
//! cdylib built from the crate, and drops it with the function when a `cfg`
//! removes the function — so a header generated from the built library
//! declares exactly what was compiled, under the symbol names it exports.

use proc_macro2::{Literal, Span, TokenStream};
use quote::quote;
use syn::{LitByteStr, LitInt};

use crate::{format, targets};

/// The fields of one record.
pub(crate) struct Record {
    /// [`format::EXPORT`] or [`format::LOCAL`].
    pub kind: &'static str,
    pub name: String,
    /// The C declaration with [`format::NAME_SLOT`] for the name.
    pub signature: String,
    /// The `TYPES` field.
    pub types: String,
    pub docs: String,
}

impl Record {
    fn bytes(&self) -> Vec<u8> {
        let version = format::VERSION.to_string();
        let mut bytes = format::START.to_vec();
        for field in [
            version.as_str(),
            self.kind,
            &self.name,
            &self.signature,
            &self.types,
            &self.docs,
        ] {
            // NUL ends a field; no text of ours contains one, docs could.
            bytes.extend(field.bytes().filter(|&byte| byte != format::FIELD_END));
            bytes.push(format::FIELD_END);
        }
        bytes.extend_from_slice(format::END);
        bytes
    }

    /// The `#[used]` static `__CALLGATE_DECL` holding the record as the
    /// descriptor of an ELF note (`rt::DeclNote`), in its own section on ELF
    /// targets: linkers keep note sections when they garbage-collect
    /// unreferenced ones, whichever compiler built the object.
    pub(crate) fn note_static(&self, rt: &TokenStream) -> TokenStream {
        let mut owner = format::NOTE_OWNER.as_bytes().to_vec();
        owner.push(0);
        let owner_size = Literal::usize_unsuffixed(owner.len());
        owner.resize(padded(owner.len()), 0);
        let mut desc = self.bytes();
        desc.resize(padded(desc.len()), 0);
        let owner_len = Literal::usize_unsuffixed(owner.len());
        let desc_len = Literal::usize_unsuffixed(desc.len());
        let owner = LitByteStr::new(&owner, Span::call_site());
        let desc = LitByteStr::new(&desc, Span::call_site());
        let note_type = LitInt::new(&format!("{:#x}", format::NOTE_TYPE), Span::call_site());
        let section = format::NOTE_SECTION;
        let elf = targets::elf();
        quote! {
            #[used]
            #[cfg_attr(#elf, unsafe(link_section = #section))]
            static __CALLGATE_DECL: #rt::DeclNote<#owner_len, #desc_len> =
                #rt::DeclNote::new(#owner_size, #note_type, *#owner, *#desc);
        }
    }
}

/// `len` rounded up to the 4-byte alignment of a note's owner and
/// descriptor.
fn padded(len: usize) -> usize {
    len.div_ceil(4) * 4
}
