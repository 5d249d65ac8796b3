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

use crate::error::CliError;
use crate::integrity::{hash_json, verify_text};
use crate::loading::{ArchSource, DeviceSummary, Pass};

/// Device memory of `neff load` without `--device-mem`: room for the real NEFFs' payloads
/// and their staging. Host pages are touched only where payloads land.
pub const DEFAULT_DEVICE_MEM: u64 = 64 << 20;
/// Address space of the `--digest-only` device.
pub const DIGEST_ONLY_CAPACITY: u64 = 64 << 30;
/// The notebook a `--budget` load's device lends (touched only as far as the load notes).
pub const BUDGET_NOTEBOOK: u64 = 256 << 20;

/// `neff check --json`'s object for one file (the document the Python package's `check`
/// returns): what was checked, and every warning as an object with the keys of a refusal
/// ([`warning_json`]). `arch` is the arch the check gated on (`--arch`), if any.
pub fn check_json(file: &str, arch: Option<Arch>, pass: &Pass, verify: bool) -> serde_json::Value {
    let r = &pass.report;
    serde_json::json!({
        "file": file,
        "target": r.target.as_str(),
        "arch": arch.map(|a| a.as_str()),
        "subgraphs": r.subgraphs.len(),
        "members": pass.finish.members,
        "manifests": pass.collected.manifests,
        "payloads": r.payloads.len(),
        "payload_bytes": r.payloads.iter().map(|p| p.len).sum::<u64>(),
        "tar_bytes": r.inflated_bytes,
        // Every warning the pass raised (the header's and the archive's too, which the
        // loader's own count leaves out).
        "warnings": warnings_json(file, pass),
        "verify": verify.then(|| verify_text(&pass.header, &pass.finish.integrity)),
        "time_ms": millis(pass),
    })
}

/// Every warning of `pass` as an object ([`warning_json`]); field by field where the pass kept
/// its records ([`crate::loading::PassOptions::keep_warning_records`]), else its text alone.
pub fn warnings_json(file: &str, pass: &Pass) -> Vec<serde_json::Value> {
    pass.warnings.iter().enumerate().map(|(i, text)| warning_json(file, text, pass.warning_records.get(i))).collect()
}

/// One warning with the keys of a refusal object ([`refusal_json`]): `status` is `null` (a
/// warning never fails a load) and so is every field the record does not have.
pub fn warning_json(file: &str, text: &str, record: Option<&neff::Warning>) -> serde_json::Value {
    let nonempty = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    let position = record.and_then(|r| offset_base(r.offset_base).map(|base| (r.offset, base)));
    serde_json::json!({
        "file": file,
        "code": record.map(|r| r.kind.code()),
        "status": null,
        "stage": record.map(|r| r.stage.name()),
        "member": record.and_then(|r| nonempty(r.member.as_str())),
        "key_path": record.and_then(|r| nonempty(r.key_path.as_str())),
        "offset": position.map(|(o, _)| o),
        "offset_base": position.map(|(_, b)| b),
        "message": text.strip_prefix("warning: ").unwrap_or(text),
        "hints": [],
    })
}

/// What an offset counts from, as the JSON objects name it; `None` without an offset.
fn offset_base(base: neff::error::OffsetBase) -> Option<&'static str> {
    match base {
        neff::error::OffsetBase::None => None,
        neff::error::OffsetBase::File => Some("file"),
        neff::error::OffsetBase::Archive => Some("archive"),
        neff::error::OffsetBase::Member => Some("member"),
    }
}

/// A refusal as `--json` prints it in place of a verb's document
/// (`spec/cli-contract.md`): `{"error": {file, code, status, stage, member, key_path, offset,
/// offset_base, message, hints}}`, every key present (`null` where absent). `None` for what is
/// not a refusal (a usage error or an unreadable path, exit 2). A refusal the core did not
/// make (a header hash mismatch under `--verify`, a failed-compile marker) has no code.
pub fn refusal_json(file: Option<&str>, e: &CliError) -> Option<serde_json::Value> {
    let CliError::Rejected { message, hints, fault } = e else { return None };
    let fault = fault.as_deref();
    Some(serde_json::json!({"error": {
        "file": file,
        "code": fault.map(|f| f.code),
        "status": fault.map(|f| f.status.name()),
        "stage": fault.map(|f| f.stage),
        "member": fault.and_then(|f| f.member.clone()),
        "key_path": fault.and_then(|f| f.key_path.clone()),
        "offset": fault.and_then(|f| f.offset.map(|(o, _)| o)),
        "offset_base": fault.and_then(|f| f.offset.map(|(_, b)| b)),
        "message": fault.map_or(message.as_str(), |f| f.reason.as_str()),
        "hints": hints,
    }}))
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
