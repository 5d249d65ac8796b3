//! `neff diff`: prints [`neff_host::diff`]'s comparison of two NEFFs, as text or JSON.

use neff_host::diff::{compare, human, read_side};
use neff_host::error::{print_stdout, CliError, EXIT_REJECTED};

use crate::cli::DiffArgs;

/// Runs `neff diff`: prints the differences, exits 1 when there are any.
pub fn run(args: &DiffArgs) -> Result<(), CliError> {
    let a = read_side(&args.a)?;
    let b = read_side(&args.b)?;
    let doc = compare(&a, &b);
    let same = doc["same"] == true;
    if args.json {
        let mut t = serde_json::to_string_pretty(&doc).map_err(|e| CliError::usage(e.to_string()))?;
        t.push('\n');
        print_stdout(&t)?;
    } else {
        print_stdout(&human(&doc))?;
    }
    if !same {
        std::process::exit(EXIT_REJECTED);
    }
    Ok(())
}
