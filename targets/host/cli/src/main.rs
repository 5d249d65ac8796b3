//! `neff`: inspect, check, load, unpack and pack AWS Neuron NEFF files.
//!
//! Exit status: 0 ok, 1 the input was rejected, 2 a usage error or a path that cannot be
//! read or written. A panic (101) is a bug.
//!
//! The command is the command line ([`cli`], clap) and the printing of each verb
//! ([`commands`]); what a verb computes is the host library's (`neff_host`).

use clap::Parser;

mod cli;
mod commands;

fn main() {
    // clap prints usage errors and exits 2; --help and --version exit 0.
    let cli = crate::cli::Cli::try_parse().unwrap_or_else(|e| e.exit());
    let code = match crate::commands::run(cli) {
        Ok(()) => neff_host::error::EXIT_OK,
        Err(e) => {
            e.print();
            e.exit_code()
        }
    };
    std::process::exit(code);
}
