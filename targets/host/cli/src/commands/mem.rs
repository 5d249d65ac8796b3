//! `neff mem`: prints [`neff_host::mem`]'s figures for each file, then their sum.

use std::fmt::Write as _;

use neff_host::error::{print_stdout, CliError};
use neff_host::mem::{document, largest, mem_of_path, mib, sum, thousands, write_file};

use crate::cli::MemArgs;

/// Runs `neff mem`.
pub fn run(args: &MemArgs) -> Result<(), CliError> {
    let files = args.files.iter().map(|p| mem_of_path(p, args.profiling)).collect::<Result<Vec<_>, _>>()?;
    if args.json {
        let mut text =
            serde_json::to_string_pretty(&document(&files)).map_err(|e| CliError::rejected(e.to_string()))?;
        text.push('\n');
        return print_stdout(&text);
    }
    let mut out = String::new();
    for (i, f) in files.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_file(&mut out, f);
    }
    if files.len() > 1 {
        let _ = writeln!(
            out,
            "\nall {} files on the same NeuronCores (the shared scratchpad is shared: its largest)",
            files.len()
        );
        for (core, u) in sum(&files) {
            let total = u.iter().fold(0u64, |a, b| a.saturating_add(*b));
            let _ = writeln!(out, "  core {core}  {:>16}  ({})", thousands(total), mib(total));
        }
        if let Some((i, core, total)) = largest(&files) {
            let _ = writeln!(out, "largest: {} on core {core}, {} ({})", files[i].file, thousands(total), mib(total));
        }
    }
    print_stdout(&out)
}
