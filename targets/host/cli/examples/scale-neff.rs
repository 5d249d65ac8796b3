//! Writes a generated NEFF at the scale of real models.
//!
//! `cargo run -p neff-cli --example scale-neff -- <preset> <out.neff>`, where the preset is one
//! of `neff_host::scale::ScaleSpec::PRESETS` (`host`: every bar of the scale issue at once;
//! `firmware`: what the Cortex-M4 image embeds; `trn1`: the shapes of the trn1 NEFFs;
//! `training`: a training NEFF made mostly of JSON). Fields of the preset can be changed with
//! `field=value` arguments after it: `scale-neff firmware out.neff weights=2 inputs=8`.
use std::process::ExitCode;

use neff_host::scale::ScaleSpec;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [preset, out, overrides @ ..] = args.as_slice() else {
        eprintln!("usage: scale-neff <{}> <out.neff> [field=value ...]", ScaleSpec::PRESETS.join("|"));
        return ExitCode::from(2);
    };
    let Some(mut spec) = ScaleSpec::preset(preset) else {
        eprintln!("scale-neff: unknown preset {preset:?} (one of {})", ScaleSpec::PRESETS.join(", "));
        return ExitCode::from(2);
    };
    for o in overrides {
        if let Err(e) = spec.set(o) {
            eprintln!("scale-neff: {o:?}: {e}");
            return ExitCode::from(2);
        }
    }
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
