//! `neff info FILE [--json]`: what a NEFF holds.
//!
//! The header part is complete (human lines and the contract's `header` object). The
//! manifest part (`kelf`, `inputs`, `outputs`, `subgraphs`) comes from the core loader's
//! report: [`chain_section`] is where it plugs in.

use std::io::{self, Read};

use crate::cli::InfoArgs;
use crate::error::{print_stdout, CliError};
use crate::header_view::HeaderView;
use crate::walk::{self, body_error, Visitor, WalkSummary};

/// Collects the header and the member list while the archive streams past.
#[derive(Default)]
pub struct Inventory {
    /// The header, once read.
    pub header: Option<HeaderView>,
    /// `(name, size)` of each member, in archive order.
    pub members: Vec<(String, u64)>,
}

impl Visitor for Inventory {
    fn header(&mut self, header: &HeaderView) -> Result<(), CliError> {
        self.header = Some(header.clone());
        Ok(())
    }

    fn member(&mut self, name: &str, size: u64, body: &mut dyn Read) -> Result<(), CliError> {
        // Reading every body checks the deflate stream and the tar framing under it.
        io::copy(body, &mut io::sink()).map_err(|e| body_error(name, &e))?;
        self.members.push((name.to_owned(), size));
        Ok(())
    }
}

/// The manifest part of `info --json` (keys `kelf`, `inputs`, `outputs`, `subgraphs`), from the
/// core loader's report. Returns `None` while the loader is not wired into this build, and the
/// document then holds the `header` object only.
pub fn chain_section() -> Option<serde_json::Map<String, serde_json::Value>> {
    None
}

/// Runs `neff info`.
pub fn run(args: &InfoArgs) -> Result<(), CliError> {
    let (source, label) = super::open_input_or_sample(args.file.as_deref(), "info")?;
    let size = source.size();
    let mut inventory = Inventory::default();
    let summary = walk::walk(source, size, &mut inventory)?;
    let header = inventory.header.as_ref().ok_or_else(|| CliError::rejected("header: not read"))?;
    if args.json {
        let mut doc = serde_json::Map::new();
        doc.insert("header".into(), serde_json::to_value(header.to_json()).map_err(|e| CliError::rejected(e.to_string()))?);
        if let Some(chain) = chain_section() {
            doc.extend(chain);
        }
        let text = serde_json::to_string_pretty(&serde_json::Value::Object(doc)).map_err(|e| CliError::rejected(e.to_string()))?;
        print_stdout(&format!("{text}\n"))
    } else {
        print_stdout(&human(&label, size, header, &inventory, &summary))
    }
}

/// The human-readable report.
pub fn human(label: &str, size: u64, header: &HeaderView, inventory: &Inventory, summary: &WalkSummary) -> String {
    let mut out = format!("{label} ({size} bytes)\n\nheader\n");
    for (key, value) in header.human_lines() {
        out.push_str(&format!("  {key:<20} {value}\n"));
    }
    let packing = if header.pkg_version == 1 { "raw tar" } else { "gzip'd tar" };
    out.push_str(&format!(
        "\narchive: {packing}, {} bytes of stream + {} of padding, tar {} bytes, {} members ({} bytes)\n",
        summary.stream_bytes, summary.padding_bytes, summary.tar_bytes, summary.members, summary.member_bytes
    ));
    let width = inventory.members.iter().map(|(_, s)| s.to_string().len()).max().unwrap_or(1);
    for (name, size) in &inventory.members {
        out.push_str(&format!("  {size:>width$}  {name}\n"));
    }
    out
}
