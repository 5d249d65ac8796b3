//! `neff check` and `neff load`: one pass per file ([`neff_host::loading`]), printed as
//! [`neff_host::report`] renders it.

use std::fmt::Write as _;

use neff_host::cache::threads_of;
use neff_host::error::{capture_warnings, print_stdout, print_warnings, CliError};
use neff_host::integrity::verify_text;
use neff_host::loading::{self, arch_of, DeviceArch, PassOptions, Request, Target};
use neff_host::progress::ItemProgress;
use neff_host::report::{
    budget_json, budget_text, check_json, human, plural, refusal_json, report_json, BUDGET_NOTEBOOK,
    DEFAULT_DEVICE_MEM, DIGEST_ONLY_CAPACITY,
};
use neff_host::source::{open_input, open_input_quiet};

use crate::cli::{CheckArgs, LoadArgs};

/// Runs `neff check` on one FILE or several.
///
/// One file prints what it always has: the `ok:` report, or the refusal as the command's
/// error. Several are checked `--threads` at a time ([`neff_host::parallel`]), and each one's
/// report, warnings and refusal are printed in the order the files were given, a refusal as
/// `error: FILE: ...` with its hints; then a last error counts the refused files (exit 1) or
/// the unreadable ones (exit 2, before any refused).
pub fn check(args: &CheckArgs) -> Result<(), CliError> {
    if let [file] = args.files.as_slice() {
        let checked = open_input(file, "check").and_then(|source| check_one(args, file, source));
        return match (checked, args.json) {
            (Ok(text), _) => print_stdout(&text),
            // The refusal's object on stdout, its line on stderr as ever.
            (Err(e), true) => {
                let e = neff_host::cache::with_marker_hint(e, file);
                if let Some(doc) = refusal_json(Some(&file.display().to_string()), &e) {
                    print_stdout(&format!("{doc}\n"))?;
                }
                Err(e)
            }
            (Err(e), false) => Err(e),
        };
    }
    let mut progress = ItemProgress::new("check", args.files.len() as u64, true);
    let (mut refused, mut unreadable) = (0usize, 0usize);
    let mut out = Ok(());
    neff_host::parallel::map_ordered(
        &args.files,
        threads_of(args.threads),
        |file| (file, capture_warnings(|| open_input_quiet(file).and_then(|source| check_one(args, file, source)))),
        |(file, (result, warnings))| {
            print_warnings(&warnings);
            progress.inc();
            match result {
                Ok(text) => {
                    if out.is_ok() {
                        out = print_stdout(&text);
                    }
                }
                Err(e) => {
                    if e.exit_code() == neff_host::error::EXIT_REJECTED {
                        refused += 1;
                        // One file of many: its own hint, as `run` gives a single file's.
                        let e = neff_host::cache::with_marker_hint(e, file);
                        if let (true, Some(doc)) = (args.json, refusal_json(Some(&file.display().to_string()), &e)) {
                            if out.is_ok() {
                                out = print_stdout(&format!("{doc}\n"));
                            }
                        }
                        named(e, file).print();
                    } else {
                        unreadable += 1;
                        e.print();
                    }
                }
            }
        },
    );
    progress.finish();
    out?;
    let n = args.files.len();
    if unreadable > 0 {
        Err(CliError::usage(format!("{unreadable} of {n} files could not be read, {refused} refused")))
    } else if refused > 0 {
        Err(CliError::rejected(format!("{refused} of {n} files refused")))
    } else {
        Ok(())
    }
}

/// A refusal of one of several files, with the file's name in front of its message.
fn named(e: CliError, file: &std::path::Path) -> CliError {
    match e {
        CliError::Rejected { message, hints, fault } => {
            CliError::Rejected { message: format!("{}: {message}", file.display()), hints, fault }
        }
        other => other,
    }
}

/// The `ok:` report of one file (and its `verify:` line), or its refusal.
fn check_one(
    args: &CheckArgs,
    file: &std::path::Path,
    source: neff_host::source::InputSource,
) -> Result<String, CliError> {
    let arch = args.arch.map(arch_of);
    let options = PassOptions {
        allow_legacy: args.allow_legacy,
        verify: args.verify,
        keep_warning_records: args.json,
        ..PassOptions::default()
    };
    let pass = loading::run(source, Request::check().onto(Target::Check(arch)).with(options))?;
    if args.json {
        return Ok(format!("{}\n", check_json(&file.display().to_string(), arch, &pass, args.verify)));
    }
    let r = &pass.report;
    let bytes: u64 = r.payloads.iter().map(|p| p.len).sum();
    let gate = arch.map_or_else(String::new, |a| format!(", runs on {}", a.as_str()));
    let mut out = format!(
        "ok: {}: target {:?}{gate}, {} subgraphs, {} members: {} manifests, {} payloads ({bytes} bytes), tar {} bytes, {}\n",
        file.display(),
        r.target.as_str(),
        r.subgraphs.len(),
        pass.finish.members,
        pass.collected.manifests,
        r.payloads.len(),
        r.inflated_bytes,
        plural(r.warnings, "warning")
    );
    if args.verify {
        let _ = writeln!(out, "verify: {}", verify_text(&pass.header, &pass.finish.integrity));
    }
    Ok(out)
}

/// The device a `load` asks for.
pub fn target_of(args: &LoadArgs) -> Target {
    let arch = args.arch.map_or(DeviceArch::NeffTarget, |a| DeviceArch::Pinned(arch_of(a)));
    if args.budget {
        Target::DigestOnly { arch, capacity: DIGEST_ONLY_CAPACITY, notebook: BUDGET_NOTEBOOK }
    } else if args.digest_only {
        Target::DigestOnly { arch, capacity: DIGEST_ONLY_CAPACITY, notebook: 0 }
    } else {
        Target::Memory { arch, bytes: args.device_mem.unwrap_or(DEFAULT_DEVICE_MEM) }
    }
}

/// Runs `neff load`.
pub fn load(args: &LoadArgs) -> Result<(), CliError> {
    let (source, label) = neff_host::source::open_input_or_sample(args.file.as_deref(), "load")?;
    let options = PassOptions { verify: args.verify, measure_replay: args.budget, ..PassOptions::default() };
    let pass = loading::run(source, Request::check().onto(target_of(args)).with(options))?;
    if args.json {
        let mut doc = report_json(&pass)?;
        if let (true, Some(map)) = (args.budget, doc.as_object_mut()) {
            map.insert("budget".into(), budget_json(&pass.needs));
        }
        let text = serde_json::to_string_pretty(&doc).map_err(|e| CliError::rejected(e.to_string()))?;
        print_stdout(&format!("{text}\n"))
    } else if args.budget {
        print_stdout(&format!("{}{}", human(&label, &pass), budget_text(&pass.needs)))
    } else {
        print_stdout(&human(&label, &pass))
    }
}
