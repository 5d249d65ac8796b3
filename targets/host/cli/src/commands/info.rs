//! `neff info`: prints [`neff_host::info`]'s document of one NEFF, as text or JSON.

use neff_host::error::{CliError, StdoutText};
use neff_host::info::{info_json, write_human};
use neff_host::loading::{self, PassOptions};

use crate::cli::InfoArgs;

/// Runs `neff info`.
pub fn run(args: &InfoArgs) -> Result<(), CliError> {
    let (source, label) = neff_host::source::open_input_or_sample(args.file.as_deref(), "info")?;
    let size = source.size();
    let options = PassOptions { verify: args.verify, ..PassOptions::default() };
    let mut pass = loading::run(source, loading::Request::info().with(options))?;
    let doc = info_json(&mut pass)?;
    let mut out = StdoutText::new();
    if args.json {
        let _ = std::fmt::Write::write_str(&mut out, &doc.pretty());
        let _ = std::fmt::Write::write_str(&mut out, "\n");
    } else {
        write_human(&mut out, &label, size, &pass, &doc.parse()?);
    }
    out.finish()
}
