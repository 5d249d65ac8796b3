//! The consumed-key tables as Markdown: the text of `schema/README.md` and of `neff schema`.
//!
//! # Format
//!
//! A title and a note, then one section per manifest tier (`## def.json`, ...) holding a
//! table with one row per [`CONSUMED_KEYS`] record — key path (with its other spellings), JSON
//! type, required, default, destination field, discriminator map, the runtime's message when
//! the key is absent, and what the key means with its notes — then `## Layouts`, one table per
//! [`LAYOUTS`] entry (field, type, offset). Tiers and rows keep the order of the tables, so
//! the text is a function of the schema alone. A `|` inside a cell is escaped as `\|`.
//!
//! Written to any [`core::fmt::Write`], without allocation, so firmware could print it too.

use core::fmt::{self, Write};

use super::{ConsumedKey, CONSUMED_KEYS, LAYOUTS};

/// The title and note above the tables.
const PREAMBLE: &str =
    "# Consumed keys (generated)\n\nGenerated from `schema/*.toml` by `tests/manifest_schema_doc.rs` \
(`NEFF_UPDATE_SCHEMA_DOC=1 cargo test --test manifest_schema_doc`). Do not edit.\n";

/// The header of each tier's table.
const TABLE_HEADER: &str =
    "| key path | JSON type | required | default | destination | map | runtime message when absent | notes |\n\
|---|---|---|---|---|---|---|---|\n";

/// Writes `text` with every `|` escaped, so it stays inside one table cell.
fn cell(out: &mut impl Write, text: &str) -> fmt::Result {
    for (i, part) in text.split('|').enumerate() {
        if i > 0 {
            out.write_str("\\|")?;
        }
        out.write_str(part)?;
    }
    Ok(())
}

/// The notes cell: `doc`, a space, `notes`, with the whole trimmed (either may be empty).
fn notes_cell(out: &mut impl Write, doc: &str, notes: &str) -> fmt::Result {
    match (doc.trim().is_empty(), notes.trim().is_empty()) {
        (true, true) => Ok(()),
        (true, false) => cell(out, notes.trim()),
        (false, true) => cell(out, doc.trim()),
        (false, false) => {
            cell(out, doc.trim_start())?;
            out.write_char(' ')?;
            cell(out, notes.trim_end())
        }
    }
}

/// One table row.
fn key_row(out: &mut impl Write, k: &ConsumedKey) -> fmt::Result {
    write!(out, "| `{}`", k.path)?;
    if let Some((first, rest)) = k.aliases.split_first() {
        write!(out, " (also `{first}")?;
        for alias in rest {
            write!(out, "`, `{alias}")?;
        }
        out.write_str("`)")?;
    }
    out.write_str(" | ")?;
    cell(out, k.json_type)?;
    out.write_str(if k.required { " | yes | " } else { " |  | " })?;
    cell(out, k.default)?;
    write!(out, " | `{}` | {} | ", k.field, k.map)?;
    cell(out, k.missing)?;
    out.write_str(" | ")?;
    notes_cell(out, k.doc, k.notes)?;
    out.write_str(" |\n")
}

/// Writes the consumed-key tables and the layouts as Markdown (the text of
/// `schema/README.md`).
pub fn write_markdown(out: &mut impl Write) -> fmt::Result {
    out.write_str(PREAMBLE)?;
    let mut tier = "";
    for k in CONSUMED_KEYS {
        if k.tier != tier {
            tier = k.tier;
            write!(out, "\n## {tier}\n\n{TABLE_HEADER}")?;
        }
        key_row(out, k)?;
    }
    out.write_str("\n## Layouts\n")?;
    for l in LAYOUTS {
        write!(
            out,
            "\n### `{}` ({} bytes, `{}`)\n\n| field | type | offset |\n|---|---|---|\n",
            l.c_name, l.size, l.name
        )?;
        for f in l.fields {
            writeln!(out, "| `{}` | `{}` | {} |", f.name, f.ty, f.offset)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Collects into a fixed buffer (no alloc in the core's tests either).
    struct Buf<const N: usize>(heapless::String<N>);

    impl<const N: usize> Write for Buf<N> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.push_str(s).map_err(|_| fmt::Error)
        }
    }

    fn render_row(k: &ConsumedKey) -> heapless::String<512> {
        let mut b = Buf::<512>(heapless::String::new());
        key_row(&mut b, k).unwrap();
        b.0
    }

    const KEY: ConsumedKey = ConsumedKey {
        tier: "def.json",
        path: "runtime_statebuffer_reservation[].base_partition",
        aliases: &["start_partition", "first"],
        json_type: "unsigned integer",
        required: true,
        default: "",
        field: "Carveout.start_partition",
        map: "",
        missing: "a|b",
        doc: "First partition.",
        notes: "",
    };

    #[test]
    fn a_row_escapes_pipes_and_lists_aliases() {
        let row = render_row(&KEY);
        assert_eq!(
            row.as_str(),
            "| `runtime_statebuffer_reservation[].base_partition` (also `start_partition`, `first`) | unsigned integer | yes |  \
             | `Carveout.start_partition` |  | a\\|b | First partition. |\n"
        );
    }

    #[test]
    fn the_notes_cell_joins_doc_and_notes_and_trims() {
        let row = |doc, notes| render_row(&ConsumedKey { aliases: &[], doc, notes, ..KEY });
        assert!(row("", " n ").ends_with("| n |\n"));
        assert!(row(" d ", "").ends_with("| d |\n"));
        assert!(row(" d ", " n ").ends_with("| d   n |\n"));
        assert!(row("", "").ends_with("|  |\n"));
    }

    #[test]
    fn a_full_writer_is_an_error_not_a_truncation_panic() {
        let mut small = Buf::<64>(heapless::String::new());
        assert!(write_markdown(&mut small).is_err());
    }
}
