//! Code generation for `neff_macros::schema!`: reads the TOML files of `schema/`, checks them,
//! and produces the manifest structs, discriminator enums, `#[repr(C)]` layouts with their
//! size and offset assertions, consumed-key parsers and the consumed-key table.
//!
//! This is a plain library so that it can be unit-tested; the proc-macro crate is a thin
//! wrapper. Every failure is a [`SchemaError`] whose text starts with `file:line:col`.

pub mod c;
pub mod errors;
pub mod gen;
pub mod kinds;
pub mod model;
pub mod tokens;
pub mod ty;

use std::path::Path;

use proc_macro2::TokenStream;

pub use model::{SchemaError, SchemaFile};

/// Checks `files` (against the tiers of `kinds`) and generates every item.
pub fn generate(files: &[SchemaFile], kinds: &kinds::Kinds) -> Result<TokenStream, SchemaError> {
    Ok(gen::check(files, kinds)?.generate())
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
    let kinds = load_kinds(dir, display_prefix)?;
    let checked = gen::check(&files, &kinds)?;
    let mut out = match part {
        Part::All => checked.generate(),
        Part::Enums => checked.generate_enums(),
        Part::Readers => checked.generate_readers(),
    };
    out.extend(kinds.track());
    for f in &files {
        out.extend(tokens::track(&f.path));
    }
    Ok(out)
}

/// The kinds table of the schema directory `dir`.
pub fn load_kinds(dir: &Path, display_prefix: &str) -> Result<kinds::Kinds, SchemaError> {
    kinds::Kinds::load(&dir.join(model::KINDS_FILE), &format!("{display_prefix}{}", model::KINDS_FILE))
}

/// `kinds!`'s expansion: the enum `which` of the kinds table at `path` (in a schema directory,
/// whose files give the tiers' documents).
pub fn expand_kinds(path: &Path, display: &str, which: &str) -> Result<TokenStream, SchemaError> {
    let Some(which) = kinds::KindEnum::named(which) else {
        let names: Vec<&str> = kinds::KindEnum::ALL.iter().map(|(n, _)| *n).collect();
        return Err(SchemaError(format!("{display}: no enum `{which}` (expected one of {})", names.join(", "))));
    };
    let kinds = kinds::Kinds::load(path, display)?;
    // Only the tiers' documents need the schema files.
    let files = if matches!(which, kinds::KindEnum::Scratch | kinds::KindEnum::Manifest) {
        let dir = path.parent().unwrap_or(Path::new("."));
        model::load_dir(dir, display.strip_suffix(model::KINDS_FILE).unwrap_or(""))?
    } else {
        Vec::new()
    };
    kinds.generate(which, &files)
}
