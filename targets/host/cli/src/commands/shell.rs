//! `neff completions SHELL` and `neff man [VERB]`: shell completions and man pages, generated
//! from the command line's own clap definitions (`clap_complete`, `clap_mangen`), so they
//! always match the binary.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;
use crate::cli::{CompletionsArgs, ManArgs};
use neff_host::error::{print_stdout, CliError};

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "neff", &mut out);
    out
}

/// The roff source of `neff(1)`, or of `neff-VERB(1)`.
pub fn man_page(verb: Option<&str>) -> Result<Vec<u8>, CliError> {
    let mut cmd = Cli::command();
    cmd.build();
    let page = match verb {
        None => cmd,
        Some(v) => {
            let sub = cmd.find_subcommand(v).ok_or_else(|| {
                let verbs: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
                CliError::usage(format!("no verb {v:?} (one of: {})", verbs.join(", ")))
            })?;
            // One page per process: the name lives as long as the command.
            let name: &'static str = Box::leak(format!("neff-{}", sub.get_name()).into_boxed_str());
            sub.clone().name(name)
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| CliError::Path { path: "<man page>".into(), message: e.to_string() })?;
    Ok(out)
}

fn print_bytes(bytes: Vec<u8>) -> Result<(), CliError> {
    print_stdout(&String::from_utf8_lossy(&bytes))
}

/// Runs `neff completions`.
pub fn run_completions(args: &CompletionsArgs) -> Result<(), CliError> {
    print_bytes(completions(args.shell))
}

/// Runs `neff man`.
pub fn run_man(args: &ManArgs) -> Result<(), CliError> {
    print_bytes(man_page(args.verb.as_deref())?)
}
