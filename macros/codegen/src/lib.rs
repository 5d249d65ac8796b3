//! Code generation for `neff_macros::schema!`: reads the TOML files of `schema/`, checks them,
//! and produces the manifest structs, discriminator enums, `#[repr(C)]` layouts with their
//! size and offset assertions, consumed-key parsers and the consumed-key table.
//!
//! This is a plain library so that it can be unit-tested; the proc-macro crate is a thin
//! wrapper. Every failure is a [`SchemaError`] whose text starts with `file:line:col`.

pub mod c;
pub mod errors;
pub mod gen;
pub mod model;
pub mod ty;

use std::path::Path;

use proc_macro2::TokenStream;
use quote::quote;

pub use model::{SchemaError, SchemaFile};

/// Checks `files` and generates every item.
pub fn generate(files: &[SchemaFile]) -> Result<TokenStream, SchemaError> {
    Ok(gen::check(files)?.generate())
}

/// Which items of a schema to expand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Every item.
    All,
    /// The discriminator enums alone (a leaf module's).
    Enums,
    /// Everything but the enums (the manifest tier's).
    Readers,
}

/// Loads `dir` (every `*.toml`, sorted), generates `part`'s items, and adds one
/// `include_bytes!` per file so that editing a schema file rebuilds the crate.
pub fn expand_dir(dir: &Path, display_prefix: &str, part: Part) -> Result<TokenStream, SchemaError> {
    let files = model::load_dir(dir, display_prefix)?;
    let checked = gen::check(&files)?;
    let mut out = match part {
        Part::All => checked.generate(),
        Part::Enums => checked.generate_enums(),
        Part::Readers => checked.generate_readers(),
    };
    for f in &files {
        let p = f.path.to_string_lossy().into_owned();
        out.extend(quote!(
            const _: &[u8] = include_bytes!(#p);
        ));
    }
    Ok(out)
}
