//! `neff schema [--format markdown|json]`: the consumed-key tables generated from `schema/`.
//!
//! Markdown is the core's own rendering ([`neff::manifest::doc::write_markdown`]), the same
//! text as the checked-in `schema/README.md`. JSON is one array with one object per
//! [`neff::manifest::CONSUMED_KEYS`] record, keys named after the record's fields.

use serde::Serialize;

use crate::cli::{SchemaArgs, SchemaFormat};
use neff_host::error::{print_stdout, CliError};

/// One consumed key, as `--format json` prints it.
#[derive(Debug, Serialize)]
pub struct KeyRecord {
    /// `neff.json`, `kelf`, `def.json` or `engine`.
    pub tier: &'static str,
    /// Key path from the document root.
    pub path: &'static str,
    /// Other accepted spellings of the last key.
    pub aliases: &'static [&'static str],
    /// JSON type.
    pub json_type: &'static str,
    /// Absent is an error.
    pub required: bool,
    /// The value used when absent, as TOML (`null`: none).
    pub default: Option<&'static str>,
    /// Destination `Type.field`.
    pub field: &'static str,
    /// The discriminator enum a string selects (`null`: none).
    pub map: Option<&'static str>,
    /// The runtime's message when a required key is absent (`null`: none).
    pub missing: Option<&'static str>,
    /// What the key means.
    pub doc: &'static str,
    /// Sources and resolved conflicts (`null`: none).
    pub notes: Option<&'static str>,
}

fn non_empty(s: &'static str) -> Option<&'static str> {
    (!s.is_empty()).then_some(s)
}

/// The `--format json` records.
pub fn key_records() -> Vec<KeyRecord> {
    neff::manifest::CONSUMED_KEYS
        .iter()
        .map(|k| KeyRecord {
            tier: k.tier,
            path: k.path,
            aliases: k.aliases,
            json_type: k.json_type,
            required: k.required,
            default: non_empty(k.default),
            field: k.field,
            map: non_empty(k.map),
            missing: non_empty(k.missing),
            doc: k.doc,
            notes: non_empty(k.notes),
        })
        .collect()
}

/// The Markdown tables (the text of `schema/README.md`).
pub fn markdown() -> Result<String, CliError> {
    let mut out = String::new();
    neff::manifest::doc::write_markdown(&mut out)
        .map_err(|_| CliError::rejected("schema: cannot render the tables"))?;
    Ok(out)
}

/// Runs `neff schema`.
pub fn run(args: &SchemaArgs) -> Result<(), CliError> {
    match args.format {
        SchemaFormat::Markdown => print_stdout(&markdown()?),
        SchemaFormat::Json => {
            let text = serde_json::to_string_pretty(&key_records()).map_err(|e| CliError::rejected(e.to_string()))?;
            print_stdout(&format!("{text}\n"))
        }
    }
}
