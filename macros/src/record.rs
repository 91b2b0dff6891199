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

/// Opens and closes a hole in a record's text: `HOLE` index `HOLE`, where
/// the compiler writes the value of `Record::holes[index]`.
pub(crate) const HOLE: char = '\u{1}';

/// The fields of one record.
pub(crate) struct Record {
    /// [`format::EXPORT`], [`format::LOCAL`], … .
    pub kind: &'static str,
    pub name: String,
    /// The C declaration with [`format::NAME_SLOT`] for the name.
    pub signature: String,
    /// The `TYPES` field.
    pub types: String,
    pub docs: String,
    /// The `FREE` field.
    pub free: String,
    /// Integer expressions (an enum's discriminants, an array's length)
    /// only the compiler can evaluate, which `signature` refers to by
    /// [`HOLE`]s; their values are written in decimal.
    pub holes: Vec<TokenStream>,
}

impl Record {
    /// The record's text, holes and all.
    fn text(&self) -> Vec<u8> {
        let version = format::VERSION.to_string();
        let mut bytes = format::START.to_vec();
        for field in [
            version.as_str(),
            self.kind,
            &self.name,
            &self.signature,
            &self.types,
            &self.docs,
            &self.free,
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
    /// unreferenced ones, whichever compiler built the object. A record
    /// with holes is assembled by the compiler (`rt::record_bytes`).
    pub(crate) fn note_static(&self, rt: &TokenStream) -> TokenStream {
        let mut owner = format::NOTE_OWNER.as_bytes().to_vec();
        owner.push(0);
        let owner_size = Literal::usize_unsuffixed(owner.len());
        owner.resize(padded(owner.len()), 0);
        let owner_len = Literal::usize_unsuffixed(owner.len());
        let owner = LitByteStr::new(&owner, Span::call_site());
        let note_type = LitInt::new(&format!("{:#x}", format::NOTE_TYPE), Span::call_site());
        let section = format::NOTE_SECTION;
        let elf = targets::elf();
        let mut desc = self.text();
        if self.holes.is_empty() {
            desc.resize(padded(desc.len()), 0);
            let desc_len = Literal::usize_unsuffixed(desc.len());
            let desc = LitByteStr::new(&desc, Span::call_site());
            return quote! {
                #[used]
                #[cfg_attr(#elf, unsafe(link_section = #section))]
                static __CALLGATE_DECL: #rt::DeclNote<#owner_len, #desc_len> =
                    #rt::DeclNote::new(#owner_size, #note_type, *#owner, *#desc);
            };
        }
        let pieces = self.pieces(&desc, rt);
        quote! {
            const __CALLGATE_PIECES: &[#rt::RecordPiece] = &[#(#pieces),*];
            #[used]
            #[cfg_attr(#elf, unsafe(link_section = #section))]
            static __CALLGATE_DECL: #rt::DeclNote<
                #owner_len,
                { #rt::record_len(__CALLGATE_PIECES) },
            > = #rt::DeclNote::new(
                #owner_size,
                #note_type,
                *#owner,
                #rt::record_bytes(__CALLGATE_PIECES),
            );
        }
    }

    /// `text` cut at the holes: `RecordPiece::Text` and `RecordPiece::Int`
    /// in turn.
    fn pieces(&self, text: &[u8], rt: &TokenStream) -> Vec<TokenStream> {
        let mut pieces = Vec::new();
        let mut parts = text.split(|&byte| byte == HOLE as u8);
        while let Some(part) = parts.next() {
            if !part.is_empty() {
                let part = LitByteStr::new(part, Span::call_site());
                pieces.push(quote!(#rt::RecordPiece::Text(#part)));
            }
            let Some(index) = parts.next() else { break };
            let index: usize = std::str::from_utf8(index)
                .ok()
                .and_then(|index| index.parse().ok())
                .expect("a hole holds its index");
            let expr = &self.holes[index];
            pieces.push(quote!(#rt::RecordPiece::Int((#expr) as i128)));
        }
        pieces
    }
}

/// The text of a hole for `Record::holes[index]`.
pub(crate) fn hole(index: usize) -> String {
    format!("{HOLE}{index}{HOLE}")
}

/// `len` rounded up to the 4-byte alignment of a note's owner and
/// descriptor.
fn padded(len: usize) -> usize {
    len.div_ceil(4) * 4
}
