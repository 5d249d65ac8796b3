//! The verbs. Each takes its parsed arguments and returns `Ok` or a [`CliError`]; `main`
//! turns that into output on stderr and the exit status.

use std::path::Path;

use neff_host::error::{print_stdout, CliError};

use crate::cli::{Cli, Command};

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
        // Several files: `--threads` is how many are checked at once, each inflated on the
        // thread that checks it (a thread more per file would only compete for the cores).
        Command::Check(a) if a.files.len() <= 1 => a.threads,
        Command::Check(_) | Command::Cache(_) => Some(1),
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
    neff_host::inflate::configure(threads.map(usize::from), env("NEFF_PARALLEL_MIN_BYTES"), env("NEFF_INFLATE_CHUNK"));
    neff_host::loading::set_verbose(cli.verbose);
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
    // With `--json`, a refusal is also a JSON object on stdout (`check` prints its own, one
    // per file).
    let json = match &cli.command {
        Command::Info(a) => a.json,
        Command::Load(a) => a.json,
        Command::Mem(a) => a.json,
        Command::Diff(a) => a.json,
        Command::Ls(a) => a.json,
        Command::Cache(a) => a.json,
        _ => false,
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
    let result = result.map_err(|e| neff_host::cache::with_marker_hints(e, &inputs));
    if let (true, Err(e)) = (json, &result) {
        // The file the refusal is of, where the verb read one.
        let file = match inputs.as_slice() {
            [one] => Some(one.display().to_string()),
            _ => None,
        };
        if let Some(doc) = neff_host::report::refusal_json(file.as_deref(), e) {
            print_stdout(&format!("{doc}\n"))?;
        }
    }
    result
}
