//! `neff check` and `neff load`: everything the loader validates, with or without the
//! simulated device.
//!
//! Both read the header and walk the whole archive here (so a damaged file is refused with
//! the archive error), then hand over to the core loader: the lead wires
//! `neff::loader::{check, load}` into [`check`] and [`load`] where [`super::loader_not_wired`]
//! is returned now. The parsed flags are ready: `--arch` as [`crate::cli::Arch`] (with its
//! `code()`), `--allow-legacy`, `--device-mem` in bytes, `--digest-only`, `--json`.

use crate::cli::{CheckArgs, LoadArgs};
use crate::commands::info::Inventory;
use crate::error::CliError;
use crate::walk;

/// Runs `neff check`.
pub fn check(args: &CheckArgs) -> Result<(), CliError> {
    let source = super::open_input(&args.file, "check")?;
    let size = source.size();
    walk::walk(source, size, &mut Inventory::default())?;
    let _ = (args.arch, args.allow_legacy);
    Err(super::loader_not_wired("check"))
}

/// Runs `neff load`.
pub fn load(args: &LoadArgs) -> Result<(), CliError> {
    let (source, _label) = super::open_input_or_sample(args.file.as_deref(), "load")?;
    let size = source.size();
    walk::walk(source, size, &mut Inventory::default())?;
    let _ = (args.arch, args.device_mem, args.digest_only, args.json);
    Err(super::loader_not_wired("load"))
}
