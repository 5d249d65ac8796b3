//! Small pieces every generator emits or checks the same way: doc attributes, the
//! `include_bytes!` that rebuilds the crate when a table changes, and identifier checks.

use std::path::Path;

use proc_macro2::TokenStream;
use quote::quote;

/// `doc` as `#[doc]` attributes, one per line (the whole trimmed, each line's end trimmed).
pub fn doc_attrs(doc: &str) -> TokenStream {
    let lines = doc.trim().lines().map(|l| {
        let l = l.trim_end();
        if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        }
    });
    quote!(#(#[doc = #lines])*)
}

/// An `include_bytes!` of the file at `path`, so that editing it rebuilds the crate.
pub fn track(path: &Path) -> TokenStream {
    let path = path.to_string_lossy().into_owned();
    quote!(
        const _: &[u8] = include_bytes!(#path);
    )
}

/// Whether `s` is a Rust identifier.
pub fn is_ident(s: &str) -> bool {
    syn::parse_str::<syn::Ident>(s).is_ok()
}
