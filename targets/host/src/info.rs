//! `neff info FILE [--json]`: what a NEFF holds.
//!
//! One streaming pass of the core loader without a device (everything a load checks, so a
//! NEFF that `info` shows is one `check` accepts), with an observer that copies what is
//! printed out of each manifest as it is parsed. `--json` is the object of
//! `spec/cli-contract.md`, key by key and in order, then a `hash` object (the stored header
//! hash and the outcome of `--verify`); the human form shows the same facts plus the archive
//! figures and the payload table.

use serde::Deserialize;

use crate::error::CliError;
use crate::integrity::verify_text;
use crate::loading::{CarveoutInfo, Fp8Info, Pass, QueueInfo, TensorInfo, VarInfo};

/// The `info --json` document as the core wrote it ([`neff::info`], the text the C ABI's
/// `neff_info` writes too): compact JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoDocument {
    /// The document, compact.
    pub text: String,
}

impl InfoDocument {
    /// The document indented as `neff info --json` prints it (two spaces, `"key": value`,
    /// empty arrays and objects as `[]` and `{}`).
    pub fn pretty(&self) -> String {
        indent(&self.text)
    }

    /// The document read back into values (for the human report and the bindings' walks).
    pub fn parse(&self) -> Result<InfoJson, CliError> {
        serde_json::from_str(&self.text).map_err(|e| CliError::rejected(format!("the info document: {e}")))
    }
}

/// The `info --json` document read back: what the human report and the bindings walk (the
/// `header` and `hash` objects are read from the pass itself).
#[derive(Debug, Deserialize)]
pub struct InfoJson {
    /// One entry per KELF node.
    pub kelf: Vec<KelfJson>,
    /// Inputs, in `arg_nodes` order.
    pub inputs: Vec<TensorInfo>,
    /// Outputs, one per distinct name, in `heads` order.
    pub outputs: Vec<TensorInfo>,
    /// One per graph of every KELF.
    pub subgraphs: Vec<SubgraphJson>,
    /// The compiler that wrote the NEFF: `info.json`'s `tool_version`, `null` without one.
    pub compiler_version: Option<String>,
}

/// A KELF node.
#[derive(Debug, Deserialize)]
pub struct KelfJson {
    /// The KELF member.
    pub member: String,
    /// `version` as written.
    pub version: Option<String>,
    /// `target` as written.
    pub target: Option<String>,
    /// `al_hal_tpb_arch_type` of the target, `null` for `*`.
    pub arch: Option<u32>,
}

/// A subgraph.
#[derive(Debug, Deserialize)]
pub struct SubgraphJson {
    /// The graph name from the KELF.
    pub name: String,
    /// The `def.json` member.
    pub definition: String,
    /// `def.json` `version`.
    pub version: Option<String>,
    /// Variables by `var_id`.
    pub vars: Vec<VarInfo>,
    /// Queue sets by name.
    pub dma_queues: Vec<QueueInfo>,
    /// Engines in `pe act pool dve sp` order.
    pub engines: Vec<EngineJson>,
    /// State-buffer carveouts.
    pub carveouts: Vec<CarveoutInfo>,
    /// FP8 policy.
    pub fp8: Option<Fp8Info>,
}

/// An engine.
#[derive(Debug, Deserialize)]
pub struct EngineJson {
    /// `pe`, `act`, `pool`, `dve` or `sp`.
    pub engine: String,
    /// The engine JSON member.
    pub json: String,
    /// The instruction stream member.
    pub instr: Option<String>,
    /// Its length in bytes.
    pub instr_size: Option<u64>,
    /// `instr_size / 64`.
    pub ninstr: Option<u64>,
}

/// The `info --json` document of a pass that logged it ([`crate::loading::Request::info`]):
/// written by the core's builder, the one the C ABI calls, into a buffer as large as it needs.
pub fn info_json(pass: &mut Pass) -> Result<InfoDocument, CliError> {
    let integrity = Some(pass.finish.integrity);
    let Some(info) = pass.info.as_mut() else {
        return Err(CliError::rejected("the pass kept no info document (not an info pass)"));
    };
    // A first guess; a longer document says its size and is written again.
    let mut text = vec![0u8; 64 * 1024];
    let len = match info.log.render(&info.header, integrity, &mut text) {
        Ok(len) => len,
        Err(neff::info::InfoError::Document { needed }) => {
            text.resize(needed, 0);
            info.log.render(&info.header, integrity, &mut text).map_err(|e| CliError::rejected(e.to_string()))?
        }
        Err(e) => return Err(CliError::rejected(e.to_string())),
    };
    text.truncate(len);
    let text = String::from_utf8(text).map_err(|e| CliError::rejected(format!("the info document: {e}")))?;
    Ok(InfoDocument { text })
}

/// `24-39` for a run of consecutive numbers, `1, 5` otherwise.
pub fn ranges(values: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j + 1 < values.len() && values[j + 1] == values[j].wrapping_add(1) {
            j += 1;
        }
        parts.push(if j > i + 1 { format!("{}-{}", values[i], values[j]) } else { values[i].to_string() });
        if j == i + 1 {
            parts.push(values[j].to_string());
        }
        i = j + 1;
    }
    parts.join(", ")
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "-".to_owned(), T::to_string)
}

fn shape(s: &[u64]) -> String {
    format!("[{}]", s.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))
}

/// The human-readable report.
pub fn human(label: &str, size: u64, pass: &Pass, doc: &InfoJson) -> String {
    let mut out = String::new();
    write_human(&mut out, label, size, pass, doc);
    out
}

/// The human-readable report, written to `out` as it is made (a `def.json` of 100,000 vars
/// makes megabytes of it: streamed to stdout, it is never held whole).
pub fn write_human(out: &mut impl std::fmt::Write, label: &str, size: u64, pass: &Pass, doc: &InfoJson) {
    let header = &pass.header;
    let report = &pass.report;
    let _ = write!(out, "{label} ({size} bytes)\n\nheader\n");
    for (key, value) in header.human_lines() {
        let _ = writeln!(out, "  {key:<20} {value}");
    }
    if pass.finish.integrity != neff::header::Integrity::NotRequested {
        let _ = writeln!(out, "  {:<20} {}", "verify", verify_text(&pass.header, &pass.finish.integrity));
    }
    let packing = if header.pkg_version == 1 { "raw tar" } else { "gzip'd tar" };
    let f = &pass.finish;
    let payload_bytes: u64 = report.payloads.iter().map(|p| p.member_len).sum();
    let _ = writeln!(
        out,
        "\narchive: {packing}, {} bytes of stream + {} of padding, tar {} bytes, {} members ({} manifests read, {} payloads of {payload_bytes} bytes, the rest skipped)",
        f.compressed_bytes,
        f.padding_bytes,
        f.inflated_bytes,
        f.members,
        pass.collected.manifests,
        report.payloads.len()
    );
    if let Some(version) = &doc.compiler_version {
        let _ = writeln!(out, "compiler: {version} (info.json tool_version)");
    }

    for k in &doc.kelf {
        let arch = k.arch.map_or_else(|| "any arch".to_owned(), |a| format!("arch {a}"));
        let graphs = pass.collected.kelfs.get(&k.member).map_or(0, |i| i.graphs.len());
        let _ = writeln!(
            out,
            "\nkelf {}: version {}, target {:?} ({arch}), {graphs} graph{}",
            k.member,
            opt(&k.version),
            k.target.as_deref().unwrap_or(""),
            if graphs == 1 { "" } else { "s" }
        );
    }

    for (title, list) in [("inputs", &doc.inputs), ("outputs", &doc.outputs)] {
        let _ = writeln!(out, "\n{title}");
        if list.is_empty() {
            let _ = writeln!(out, "  (none: no neff.json)");
        }
        let width = list.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for t in list {
            let _ = writeln!(
                out,
                "  {:<width$}  {:<9} ({:>2})  {:<16} {} bytes",
                t.name,
                t.dtype,
                t.nrt_dtype,
                shape(&t.shape),
                t.size
            );
        }
    }

    for sg in &doc.subgraphs {
        let _ = writeln!(out, "\nsubgraph {} ({}, version {})", sg.name, sg.definition, opt(&sg.version));
        let _ = writeln!(out, "  vars ({})", sg.vars.len());
        let width = sg.vars.iter().map(|v| v.name.len()).max().unwrap_or(4).max(4);
        let _ = writeln!(
            out,
            "    {:>4}  {:<width$}  {:<12}  {:>2}  {:>12}  {:>6}  file / backing offset",
            "id", "name", "type", "mr", "size", "align"
        );
        for v in &sg.vars {
            let extra = match (&v.file_name, v.backing_variable_off) {
                (Some(f), _) => f.clone(),
                (None, Some(off)) => format!("@{off}"),
                (None, None) => String::new(),
            };
            let line = format!(
                "    {:>4}  {:<width$}  {:<12}  {:>2}  {:>12}  {:>6}  {}",
                v.var_id,
                v.name,
                v.var_type,
                opt(&v.mr_type),
                opt(&v.size),
                opt(&v.alignment),
                extra
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
        let _ = writeln!(out, "  dma queues ({})", sg.dma_queues.len());
        for q in &sg.dma_queues {
            let _ = writeln!(
                out,
                "    {:<16} type {} (ring {}), owner {}, {} queue{}, semaphores [{}]",
                q.name,
                q.queue_type,
                opt(&q.ring_type),
                opt(&q.owner),
                q.num_queues,
                if q.num_queues == 1 { "" } else { "s" },
                ranges(&q.semaphores)
            );
        }
        let _ = writeln!(out, "  engines ({})", sg.engines.len());
        for e in &sg.engines {
            let _ = writeln!(
                out,
                "    {:<5} {:<22} {:<22} {:>8} bytes, {} instructions",
                e.engine,
                e.json,
                opt(&e.instr),
                opt(&e.instr_size),
                opt(&e.ninstr)
            );
        }
        let _ = writeln!(out, "  carveouts ({})", sg.carveouts.len());
        for c in &sg.carveouts {
            let _ = writeln!(
                out,
                "    {} offset {} (0x{:x}), {} bytes, partitions {}..{}",
                c.carveout_type,
                c.offset,
                c.offset,
                c.size,
                c.start_partition,
                c.start_partition.saturating_add(c.num_partitions)
            );
        }
        match &sg.fp8 {
            Some(f) => {
                let _ = writeln!(
                    out,
                    "  fp8: range extension {}, emax e4m3 {}, emax e5m2 {}, ocp_sat {}, fp8_sis {}, fp8_sns {}",
                    f.fp8_range_extension, f.emax_fp8_e4m3, f.emax_fp8_e5m2, f.ocp_sat, f.fp8_sis, f.fp8_sns
                );
            }
            None => {
                let _ = writeln!(out, "  fp8: -");
            }
        }
    }

    let total: u64 = report.payloads.iter().map(|p| p.len).sum();
    let _ = writeln!(out, "\npayloads ({}, {total} bytes)", report.payloads.len());
    let width = report.payloads.iter().map(|p| p.len.to_string().len()).max().unwrap_or(1);
    for p in report.payloads.iter() {
        let core = p.core.map_or_else(|| "-".to_owned(), |c| c.to_string());
        let _ = writeln!(
            out,
            "  {:>4}  {:<10}  {:>width$}  {:016x}  {}",
            core,
            p.usage.as_str(),
            p.len,
            p.digest,
            p.member
        );
    }
}

/// `json` (compact, as the core writes it) indented as serde_json's pretty printer indents:
/// two spaces a level, `": "` after a key, a non-empty array or object one item a line, an
/// empty one as `[]` or `{}`.
fn indent(json: &str) -> String {
    let mut out = String::with_capacity(json.len().saturating_mul(2));
    let mut depth = 0usize;
    let mut chars = json.chars().peekable();
    let (mut in_string, mut escaped) = (false, false);
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        (0..depth).for_each(|_| out.push_str("  "));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                let close = if c == '{' { '}' } else { ']' };
                if chars.peek() == Some(&close) {
                    out.push(close);
                    chars.next();
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{indent, ranges};

    #[test]
    fn compact_json_is_indented_as_serde_json_pretty_prints_it() {
        let compact = r#"{"a":[1,{"b":"x\\\",:{["}],"c":[],"d":{},"e":{"f":null}}"#;
        let value: serde_json::Value = serde_json::from_str(compact).unwrap();
        assert_eq!(indent(compact), serde_json::to_string_pretty(&value).unwrap());
    }

    #[test]
    fn semaphore_runs_are_shortened() {
        assert_eq!(ranges(&[24, 25, 26, 27]), "24-27");
        assert_eq!(ranges(&[1, 2]), "1, 2");
        assert_eq!(ranges(&[10]), "10");
        assert_eq!(ranges(&[]), "");
        assert_eq!(ranges(&[1, 3, 4, 5, 9, 10]), "1, 3-5, 9, 10");
    }
}
