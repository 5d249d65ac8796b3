//! Writes a generated NEFF at the scale of real models.
//!
//! `cargo run -p neff-cli --example scale-neff -- <preset> <out.neff>`, where the preset is one
//! of `neff_cli::scale::ScaleSpec::PRESETS` (`host`: every bar of the scale issue at once;
//! `firmware`: what the Cortex-M4 image embeds).
use std::process::ExitCode;

use neff_cli::scale::ScaleSpec;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [preset, out] = args.as_slice() else {
        eprintln!("usage: scale-neff <{}> <out.neff>", ScaleSpec::PRESETS.join("|"));
        return ExitCode::from(2);
    };
    let Some(spec) = ScaleSpec::preset(preset) else {
        eprintln!("scale-neff: unknown preset {preset:?} (one of {})", ScaleSpec::PRESETS.join(", "));
        return ExitCode::from(2);
    };
    match spec.build().and_then(|bytes| std::fs::write(out, &bytes).map(|()| bytes.len())) {
        Ok(n) => {
            println!("{out}: {n} bytes ({preset})");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("scale-neff: {out}: {e}");
            ExitCode::FAILURE
        }
    }
}
