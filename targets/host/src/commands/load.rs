//! `neff check` and `neff load`: everything the loader validates, without or with the
//! simulated device.
//!
//! Both are one streaming pass of the core loader ([`crate::loading`]). `check` places
//! nothing: header gates, archive, every manifest tier, every payload read, digested and
//! size-checked, the chain checks, and the arch gate and rules when `--arch` is given. `load`
//! adds the device: a [`neff::sim::SimDevice`] of `--device-mem` bytes of host memory
//! ([`DEFAULT_DEVICE_MEM`] by default), or with `--digest-only` one that keeps allocation
//! records and digests of a [`DIGEST_ONLY_CAPACITY`] address space. The device's arch is
//! `--arch` (and the KELF target gate applies), or without it the NEFF's own KELF target,
//! learnt as the KELF streams past (`cayman`, a Trn2, for a target `*`); the report says which.

use std::fmt::Write as _;

use neff::hal::USAGE_CLASSES;
use neff::manifest::Arch;

use crate::cli::{CheckArgs, LoadArgs};
use crate::error::{capture_warnings, print_stdout, print_warnings, CliError};
use crate::integrity::{hash_json, verify_text};
use crate::loading::{self, arch_of, ArchSource, DeviceArch, DeviceSummary, Pass, PassOptions, Target};
use crate::progress::ItemProgress;

/// Device memory of `neff load` without `--device-mem`: room for the real NEFFs' payloads
/// and their staging. Host pages are touched only where payloads land.
pub const DEFAULT_DEVICE_MEM: u64 = 64 << 20;
/// Address space of the `--digest-only` device.
pub const DIGEST_ONLY_CAPACITY: u64 = 64 << 30;
/// The notebook a `--budget` load's device lends (touched only as far as the load notes).
pub const BUDGET_NOTEBOOK: u64 = 256 << 20;

/// Runs `neff check` on one FILE or several.
///
/// One file prints what it always has: the `ok:` report, or the refusal as the command's
/// error. Several are checked `--threads` at a time ([`crate::parallel`]), and each one's
/// report, warnings and refusal are printed in the order the files were given, a refusal as
/// `error: FILE: ...` with its hints; then a last error counts the refused files (exit 1) or
/// the unreadable ones (exit 2, before any refused).
pub fn check(args: &CheckArgs) -> Result<(), CliError> {
    if let [file] = args.files.as_slice() {
        let source = super::open_input(file, "check")?;
        return print_stdout(&check_one(args, file, source)?);
    }
    let mut progress = ItemProgress::new("check", args.files.len() as u64, true);
    let (mut refused, mut unreadable) = (0usize, 0usize);
    let mut out = Ok(());
    crate::parallel::map_ordered(
        &args.files,
        super::cache::threads_of(args.threads),
        |file| {
            (file, capture_warnings(|| super::open_input_quiet(file).and_then(|source| check_one(args, file, source))))
        },
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
                    if e.exit_code() == crate::error::EXIT_REJECTED {
                        refused += 1;
                        // One file of many: its own hint, as `run` gives a single file's.
                        named(super::cache::with_marker_hint(e, file), file).print();
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
fn check_one(args: &CheckArgs, file: &std::path::Path, source: crate::source::InputSource) -> Result<String, CliError> {
    let size = source.size();
    let arch = args.arch.map(arch_of);
    let options = PassOptions { allow_legacy: args.allow_legacy, verify: args.verify, ..PassOptions::default() };
    let pass = loading::run(source, size, Target::Check(arch), options)?;
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
    let (source, label) = super::open_input_or_sample(args.file.as_deref(), "load")?;
    let size = source.size();
    let pass =
        loading::run(source, size, target_of(args), PassOptions { verify: args.verify, ..PassOptions::default() })?;
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

/// The records of a measured arena: what it held past the host's string scratch, the same on
/// every target.
fn records(needs: &neff::loader::Needs) -> u64 {
    needs.arena.saturating_sub(neff::manifest::STRING_SCRATCH as u64)
}

/// What `--budget` measured, for a controller: its arena is its own string scratch plus the
/// records this load kept.
pub fn budget_text(needs: &neff::loader::Needs) -> String {
    let scratch = neff::manifest::BARE_METAL_STRING_SCRATCH as u64;
    let records = records(needs);
    format!(
        "budget (what a controller lends to load this NEFF, measured in this pass):\n  \
         arena     {} bytes: string scratch {scratch} on a bare-metal target + records {records} (this host: {})\n  \
         notebook  {} bytes of device memory (a landing per payload from its start, DMA references waiting for their def.json from its end)\n  \
         replay    {} bytes (members read before the manifest naming them; lend none and such a member named as another kind is refused)\n  \
         deferred  {} error slots at once ({} are the loader's own)\n",
        scratch + records,
        needs.arena,
        needs.notebook,
        needs.replay,
        needs.deferred,
        neff::loader::DEFERRED_ERRORS,
    )
}

/// [`budget_text`] as JSON.
pub fn budget_json(needs: &neff::loader::Needs) -> serde_json::Value {
    let scratch = neff::manifest::BARE_METAL_STRING_SCRATCH as u64;
    serde_json::json!({
        "arena": scratch + records(needs),
        "string_scratch": scratch,
        "records": records(needs),
        "host_arena": needs.arena,
        "notebook": needs.notebook,
        "replay": needs.replay,
        "deferred": needs.deferred,
    })
}

/// Milliseconds with microsecond resolution.
fn millis(pass: &Pass) -> f64 {
    (pass.elapsed.as_secs_f64() * 1e6).round() / 1e3
}

/// The load report as JSON: the core's summary and the placements it streamed (each
/// serialised by the core's `Serialize` impls), the I/O tensors, the header `hash` object
/// (stored value, and the outcome of `--verify`), plus `time_ms` and the `device` object.
pub fn report_json(pass: &Pass) -> Result<serde_json::Value, CliError> {
    let r = &pass.report;
    let json = |e: serde_json::Error| CliError::rejected(format!("load report: {e}"));
    let payloads: Vec<serde_json::Value> =
        r.payloads.iter().map(|p| serde_json::to_value(p.as_report())).collect::<Result<_, _>>().map_err(json)?;
    let subgraphs: Vec<serde_json::Value> =
        r.subgraphs.iter().map(|s| serde_json::to_value(s.as_report())).collect::<Result<_, _>>().map_err(json)?;
    let tensors = |list: &[crate::loading::TensorInfo]| -> Vec<serde_json::Value> {
        list.iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name, "dtype": t.dtype, "nrt_dtype": t.nrt_dtype, "shape": t.shape, "size": t.size,
                })
            })
            .collect()
    };
    let (inputs, outputs) = match &pass.collected.neff {
        Some((_, i, o)) => (tensors(i), tensors(o)),
        None => (Vec::new(), Vec::new()),
    };
    let summary = serde_json::to_value(&r.summary).map_err(json)?;
    let integrity = summary.get("integrity").cloned().unwrap_or(serde_json::Value::Null);
    let mut value = serde_json::json!({
        "device_arch": r.device_arch.map(Arch::as_str),
        "target": r.target.as_str(),
        "bytes_placed": r.bytes_placed(),
        "subgraphs": subgraphs,
        "payloads": payloads,
        "inputs": inputs,
        "outputs": outputs,
        "released": r.released,
        "warnings": r.warnings,
        "inflated_bytes": r.inflated_bytes,
        "compressed_bytes": r.compressed_bytes,
        "members": r.members,
        "padding_bytes": r.padding_bytes,
        "trailing_bytes": r.trailing_bytes,
        "integrity": integrity,
        "hash": hash_json(&pass.header, &pass.finish.integrity),
        "arena_peak": r.arena_peak,
    });
    if let Some(map) = value.as_object_mut() {
        map.insert("time_ms".into(), serde_json::json!(millis(pass)));
        if let Some(d) = &pass.device {
            map.insert(
                "device".into(),
                serde_json::json!({
                    "mode": d.mode,
                    "arch": d.arch.as_str(),
                    "arch_source": d.arch_source.as_str(),
                    "capacity": d.capacity,
                    "live_bytes": d.live_bytes,
                    "peak_bytes": d.peak_bytes,
                    "live_regions": d.live_regions,
                }),
            );
        }
    }
    Ok(value)
}

/// `1 warning`, `2 warnings`.
pub fn plural(n: u32, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// `64 MiB`, `1.5 KiB`, `17 bytes`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Which arch the device has and why: `sunda (the NEFF's target; --arch pins one)`.
pub fn device_line(d: &DeviceSummary, target: &str) -> String {
    let arch = d.arch.as_str();
    match d.arch_source {
        ArchSource::Pinned => format!("{arch} (--arch)"),
        ArchSource::NeffTarget => format!("{arch} (the NEFF's target; --arch pins one)"),
        ArchSource::Default => format!("{arch} (the default: the NEFF's target is {target:?}; --arch pins one)"),
    }
}

/// The human-readable load report.
pub fn human(label: &str, pass: &Pass) -> String {
    let r = &pass.report;
    let mut out = String::new();
    if let Some(d) = &pass.device {
        let _ = writeln!(
            out,
            "loaded {label} into a simulated {} device ({}, {}) in {:.3} ms",
            d.arch.as_str(),
            d.mode,
            human_bytes(d.capacity),
            millis(pass)
        );
        let _ = writeln!(out, "device: {}", device_line(d, &r.target));
        let _ = writeln!(
            out,
            "target {:?}; {} subgraphs; {} payloads, {} released; {} bytes placed in {} regions (peak {} bytes with staging)",
            r.target.as_str(),
            r.subgraphs.len(),
            r.payloads.len(),
            r.released,
            r.bytes_placed(),
            d.live_regions,
            d.peak_bytes
        );
    }
    let integrity = match r.integrity {
        None | Some(neff::header::Integrity::NotRequested) => "not requested",
        Some(neff::header::Integrity::Match { .. }) => "match",
        Some(neff::header::Integrity::Mismatch { .. }) => "MISMATCH",
        Some(neff::header::Integrity::NotApplicable) => "not applicable",
    };
    let _ = writeln!(
        out,
        "tar {} bytes from {} bytes of stream; integrity {integrity}; {}",
        r.inflated_bytes,
        r.compressed_bytes,
        plural(r.warnings, "warning")
    );
    if pass.finish.integrity != neff::header::Integrity::NotRequested {
        let _ = writeln!(out, "verify: {}", verify_text(&pass.header, &pass.finish.integrity));
    }
    for sg in r.subgraphs.iter() {
        let _ = writeln!(
            out,
            "\n{} (core {}): {} allocations, {} bytes",
            sg.name, sg.core, sg.allocations, sg.bytes_placed
        );
        for (class, bytes) in USAGE_CLASSES.iter().zip(sg.bytes_by_usage.iter()) {
            if *bytes != 0 {
                let _ = writeln!(out, "  {:<12} {bytes:>10}", class.as_str());
            }
        }
    }
    let _ = writeln!(out, "\npayloads");
    let _ = writeln!(
        out,
        "  {:>4}  {:<10}  {:>10}  {:>12}  {:<16}  {:<8}  member",
        "core", "usage", "bytes", "address", "digest", "state"
    );
    for p in r.payloads.iter() {
        let core = p.core.map_or_else(|| "-".to_owned(), |c| c.to_string());
        let address = p.address.map_or_else(|| "-".to_owned(), |a| format!("0x{a:x}"));
        let _ = writeln!(
            out,
            "  {core:>4}  {:<10}  {:>10}  {address:>12}  {:016x}  {:<8}  {}",
            p.usage.as_str(),
            p.len,
            p.digest,
            p.state.as_str(),
            p.member
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn byte_counts_read_in_binary_units() {
        assert_eq!(human_bytes(17), "17 bytes");
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(64 << 30), "64 GiB");
    }
}
