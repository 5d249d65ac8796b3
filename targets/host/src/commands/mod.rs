//! The verbs. Each takes its parsed arguments and returns `Ok` or a [`CliError`]; `main`
//! turns that into output on stderr and the exit status.

use std::path::Path;

use crate::cli::{Cli, Command};
use crate::consumed::ConsumedValues;
use crate::error::CliError;
use crate::progress::Progress;
use crate::source::{FileSource, InputSource};

pub mod cache;
pub mod cat;
pub mod diff;
pub mod info;
pub mod load;
pub mod ls;
pub mod mem;
pub mod pack;
pub mod schema;
pub mod shell;
pub mod unpack;

/// Runs one command line.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let threads = match &cli.command {
        Command::Info(a) => a.threads,
        // Several files: `--threads` is how many are checked at once.
        Command::Check(a) if a.files.len() <= 1 => a.threads,
        Command::Load(a) => a.threads,
        Command::Unpack(a) => a.threads,
        Command::Mem(a) => a.threads,
        Command::Diff(a) => a.threads,
        Command::Ls(a) => a.threads,
        Command::Cat(a) => a.threads,
        _ => None,
    };
    // Testing knobs: the payload size from which a file is inflated in parallel, and the
    // compressed bytes per chunk.
    let env = |name| std::env::var(name).ok().and_then(|v: String| v.parse::<u64>().ok());
    crate::inflate::configure(threads.map(usize::from), env("NEFF_PARALLEL_MIN_BYTES"), env("NEFF_INFLATE_CHUNK"));
    // Every verb's refusal says so when an input is a compile cache's failed-compile marker.
    let inputs: Vec<std::path::PathBuf> = match &cli.command {
        Command::Info(a) => a.file.iter().cloned().collect(),
        Command::Check(a) if a.files.len() == 1 => a.files.clone(),
        Command::Load(a) => a.file.iter().cloned().collect(),
        Command::Unpack(a) => vec![a.file.clone()],
        Command::Mem(a) => a.files.clone(),
        Command::Diff(a) => vec![a.a.clone(), a.b.clone()],
        Command::Ls(a) => vec![a.file.clone()],
        Command::Cat(a) => vec![a.file.clone()],
        _ => Vec::new(),
    };
    let result = match cli.command {
        Command::Info(args) => info::run(&args),
        Command::Check(args) => load::check(&args),
        Command::Load(args) => load::load(&args),
        Command::Unpack(args) => unpack::run(&args),
        Command::Pack(args) => pack::run(&args),
        Command::Schema(args) => schema::run(&args),
        Command::Mem(args) => mem::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Ls(args) => ls::run(&args),
        Command::Cat(args) => cat::run(&args),
        Command::Completions(args) => shell::run_completions(&args),
        Command::Man(args) => shell::run_man(&args),
        Command::Cache(args) => cache::run(&args),
    };
    let inputs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    result.map_err(|e| cache::with_marker_hints(e, &inputs))
}
/// One check pass over `path` that keeps the consumed manifest values and the member log:
/// what `ls` and `diff` read of a NEFF. A refusal of the manifests does not end it (the
/// archive itself sound): it is printed as a warning ([`crate::loading::Pass::refusal`]), and
/// what was read before it is shown.
pub fn consumed_pass(path: &Path, what: &str) -> Result<(crate::loading::Pass, ConsumedValues), CliError> {
    consumed_pass_of(open_input(path, what)?)
}

/// [`consumed_pass`] over any input.
pub fn consumed_pass_of(source: InputSource) -> Result<(crate::loading::Pass, ConsumedValues), CliError> {
    let size = source.size();
    crate::loading::run_observed(
        source,
        size,
        crate::loading::Target::Check(None),
        false,
        Some(crate::tap::TapOptions::members()),
        crate::loading::PassOptions { keep_going: true, ..Default::default() },
        ConsumedValues::new(),
    )
}

/// Opens FILE for streaming (exit 2 when it cannot be opened), with a progress bar labelled
/// `what` when the file is big and stderr is a terminal.
pub fn open_input(path: &Path, what: &str) -> Result<InputSource, CliError> {
    let source = FileSource::open(path).map_err(|e| CliError::path(path, &e))?;
    let progress = Progress::for_bytes(what, source.size());
    Ok(InputSource::File(source.with_progress(progress)))
}

/// Opens FILE for streaming (exit 2 when it cannot be opened) with no bar of its own: one of
/// many files read at once, whose count [`crate::progress::ItemProgress`] shows instead.
pub fn open_input_quiet(path: &Path) -> Result<InputSource, CliError> {
    Ok(InputSource::File(FileSource::open(path).map_err(|e| CliError::path(path, &e))?))
}

/// FILE, or the built-in sample NEFF when FILE is absent. Returns the source and a label.
pub fn open_input_or_sample(path: Option<&Path>, what: &str) -> Result<(InputSource, String), CliError> {
    match path {
        Some(p) => Ok((open_input(p, what)?, p.display().to_string())),
        None => Ok((InputSource::Sample(crate::SAMPLE_NEFF), "built-in sample NEFF".into())),
    }
}
