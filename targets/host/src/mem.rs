//! `neff mem FILE… [--json] [--profiling]`: the device memory a NEFF takes on each physical
//! NeuronCore, before it is loaded, in the runtime's own categories.
//!
//! The categories are the runtime's device-memory usage classes (spec §11.8, `GENERIC` 0 ..
//! `DMA_RING_COLLECTIVES` 21) under the names its profiler prints for them (`nc_mem_usage` of
//! a neuron-profile report lists them in exactly that order: Generic, Tensor Instructions,
//! ... DMA Rings Collectives). Each core's figure is two parts:
//!
//! * **from the NEFF**, exact: what the loader places for the core's subgraph, by class
//!   (weights as the `.npy` array bytes, each engine's instruction stream, activation tables,
//!   the DVE tables as Generic, GPSIMD libraries), the extent of the subgraph's `virtual` vars
//!   in the shared scratchpad (`backing_variable_off + size`), and on the LNC's first core the
//!   input and output tensors of `neff.json` (what an application allocates to run it, which
//!   the runtime counts as Tensors);
//! * **the runtime's overhead** on that arch: constants measured from real runs, with their
//!   source in [`TRN2`]. Only cayman (Trn2) has measured constants; for another arch `mem`
//!   prints the NEFF's part and says that it has no overhead figures.
//!
//! The model and its constants come from the ten neuron-profile reports in
//! `../shared/fixtures/public/trainium-kernel-fusion/*/profile.json` (trn2.3xlarge, neuronx-cc
//! 2.23.6484.0, driver 2.26.0, neuron-profile 2.28.23.0): on all twenty cores of those runs it
//! gives every category exactly (`tests/mem.rs` prints each category's error, and each
//! constant's leave-one-out error). Categories that were 0 in all ten runs (DRAM Spill,
//! Collectives, Scratchpad, XT CC, DMA Rings Spill/IO/Collectives) are only what the NEFF
//! places there.
//!
//! Several files: each, then their sum on the same NeuronCores (the shared scratchpad is
//! shared by the models of a core, so the sum takes its largest) and the file that needs the
//! most on one core. Memory stays flat: one streaming pass per file, keeping per subgraph the
//! sums the model needs and nothing that grows with the manifests.

use std::collections::HashMap;
use std::fmt::Write as _;

use neff::hal::{usage_index, USAGE_CLASS_COUNT};
use neff::loader::Observer;
use neff::manifest::{Entry, UsageClass};
use serde_json::{json, Map, Value};

use crate::error::CliError;
use crate::loading::{self, chain_kelfs, Pass};
use crate::tap::TapOptions;

/// The runtime's name of each usage class, indexed by [`usage_index`] (§11.8 numbers): the
/// names and order of neuron-profile's `nc_mem_usage` table.
pub const CATEGORIES: [&str; USAGE_CLASS_COUNT] = [
    "Generic",
    "Tensor Instructions",
    "Scalar Instructions",
    "GpSimd Instructions",
    "IO",
    "DRAM Spill",
    "Weights",
    "Profiler Buffers",
    "Scalar Table",
    "Vector Instructions",
    "Sync Instructions",
    "Shared Scratchpad",
    "Tensors",
    "Ucode lib",
    "GpSimd STDIO",
    "Collectives",
    "Scratchpad",
    "XT CC (unused)",
    "DMA Rings Runtime",
    "DMA Rings Spill",
    "DMA Rings IO",
    "DMA Rings Collectives",
];

/// The engines' instruction classes, in `pe act pool dve sp` order.
pub const INSTR_CLASSES: [UsageClass; 5] =
    [UsageClass::InstrPe, UsageClass::InstrAct, UsageClass::InstrPool, UsageClass::InstrDve, UsageClass::InstrSp];

/// Where the runtime's constants were measured.
pub const OVERHEAD_SOURCE: &str = "constants measured from ten neuron-profile reports (trn2.3xlarge, neuronx-cc 2.23.6484.0, driver 2.26.0, neuron-profile 2.28.23.0; ../shared/fixtures/public/trainium-kernel-fusion/*/profile.json)";

/// What the runtime allocates for a NEFF besides what the NEFF itself holds, on one arch.
/// "First core" is the LNC's first physical NeuronCore (the subgraph `sg00`), "other" the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeModel {
    /// The arch's codename.
    pub arch: &'static str,
    /// Bytes the runtime adds to each engine's instruction stream, `[first core, other]`, in
    /// [`INSTR_CLASSES`] order (in the reports: 104, 98, 99, 98, 82 instructions of 64 bytes
    /// on the first core; 103, 87, 98, 97, 77 on the second, whatever the stream's length).
    pub instr: [[u64; 5]; 2],
    /// Added to Scalar Table on a core whose subgraph has activation tables (the reports' one
    /// table set, 32,960 bytes, took 83,968; a core without tables takes 0).
    pub act_table: u64,
    /// Added to Generic on every core (beside the DVE tables).
    pub generic: u64,
    /// IO on the first core (the same whatever the inputs and outputs).
    pub io_first_core: u64,
    /// The runtime's GPSIMD microcode library (Ucode lib), on every core.
    pub ucode_lib: u64,
    /// GpSimd STDIO, on every core.
    pub pool_stdio: u64,
    /// DMA Rings Runtime, `[first core, other]`.
    pub dma_rings: [u64; 2],
    /// The shared scratchpad is allocated in pages of this size, on a core with `virtual`
    /// vars (the reports: 536,870,912 for extents of 1 and 4 MiB, 0 without virtual vars).
    pub scratchpad_page: u64,
    /// Profiler Buffers while neuron-profile captures (`--profiling`), on every core.
    pub profiler_buffers: u64,
}

/// Trn2 (cayman), as measured: [`OVERHEAD_SOURCE`].
pub const TRN2: RuntimeModel = RuntimeModel {
    arch: "cayman",
    instr: [[6656, 6272, 6336, 6272, 5248], [6592, 5568, 6272, 6208, 4928]],
    act_table: 51_008,
    generic: 13_312,
    io_first_core: 8,
    ucode_lib: 1_744_584,
    pool_stdio: 1088,
    dma_rings: [32_768, 30_720],
    scratchpad_page: 536_870_912,
    profiler_buffers: 2_554_331_136,
};

/// The measured model of a KELF target arch (`al_hal_tpb_arch_type`), if there is one.
pub fn runtime_model(arch: Option<u32>) -> Option<&'static RuntimeModel> {
    match arch {
        Some(3) => Some(&TRN2),
        _ => None,
    }
}

/// Bytes by category, indexed by [`usage_index`].
pub type Usage = [u64; USAGE_CLASS_COUNT];

fn at(u: &mut Usage, class: UsageClass) -> &mut u64 {
    &mut u[usage_index(class)]
}

/// What the model needs of one subgraph, from the NEFF.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubgraphFacts {
    /// Bytes the loader placed, by class.
    pub placed: Usage,
    /// `max(backing_variable_off + size)` over its `virtual` vars (0 without any).
    pub virtual_extent: u64,
}

/// The runtime's overhead on one core of `model`, for a subgraph with `facts` at `position`
/// (0: the LNC's first core).
pub fn overhead(model: &RuntimeModel, position: usize, facts: &SubgraphFacts, profiling: bool) -> Usage {
    let first = position == 0;
    let row = usize::from(!first);
    let mut u = [0; USAGE_CLASS_COUNT];
    for (i, class) in INSTR_CLASSES.into_iter().enumerate() {
        if facts.placed[usage_index(class)] > 0 {
            *at(&mut u, class) = model.instr[row][i];
        }
    }
    if facts.placed[usage_index(UsageClass::ActTable)] > 0 {
        *at(&mut u, UsageClass::ActTable) = model.act_table;
    }
    *at(&mut u, UsageClass::Generic) = model.generic;
    if first {
        *at(&mut u, UsageClass::Io) = model.io_first_core;
    }
    *at(&mut u, UsageClass::UcodeLib) = model.ucode_lib;
    *at(&mut u, UsageClass::PoolStdio) = model.pool_stdio;
    *at(&mut u, UsageClass::DmaRing) = model.dma_rings[row];
    if facts.virtual_extent > 0 {
        let pages = facts.virtual_extent.div_ceil(model.scratchpad_page);
        *at(&mut u, UsageClass::Scratchpad) = pages.saturating_mul(model.scratchpad_page) - facts.virtual_extent;
    }
    if profiling {
        *at(&mut u, UsageClass::Notification) = model.profiler_buffers;
    }
    u
}

/// One physical NeuronCore of a NEFF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreMem {
    /// The core's index in the NEFF's LNC.
    pub core: u8,
    /// The subgraph it runs.
    pub subgraph: String,
    /// Exact, from the NEFF.
    pub from_neff: Usage,
    /// The runtime's (measured) overhead, `None` without a model for the arch.
    pub runtime: Option<Usage>,
}

impl CoreMem {
    /// Both parts, by category.
    pub fn usage(&self) -> Usage {
        let mut u = self.from_neff;
        if let Some(r) = &self.runtime {
            for (a, b) in u.iter_mut().zip(r) {
                *a = a.saturating_add(*b);
            }
        }
        u
    }

    /// Every category together.
    pub fn total(&self) -> u64 {
        self.usage().iter().fold(0u64, |a, b| a.saturating_add(*b))
    }
}

/// One NEFF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMem {
    /// The path as given.
    pub file: String,
    /// The KELF target as written.
    pub target: String,
    /// `info.json`'s `tool_version`.
    pub compiler_version: Option<String>,
    /// The runtime model used.
    pub model: Option<&'static RuntimeModel>,
    /// Its cores, in order.
    pub cores: Vec<CoreMem>,
}

/// Keeps, per `def.json` member, the extent of its `virtual` vars (nothing else).
#[derive(Debug, Default)]
pub struct VirtualExtents(pub HashMap<String, u64>);

impl Observer for VirtualExtents {
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        if let Entry::Var(v) = entry {
            if v.var_type.as_str() == "virtual" {
                let end = v.backing_variable_off.unwrap_or(0).saturating_add(v.size.unwrap_or(0));
                let slot = self.0.entry(member.to_owned()).or_default();
                *slot = (*slot).max(end);
            }
        }
    }
}

/// The model of one pass.
pub fn file_mem(file: String, pass: &Pass, extents: &VirtualExtents, profiling: bool) -> FileMem {
    let c = &pass.collected;
    let kelfs = chain_kelfs(c);
    let arch = kelfs.first().and_then(|k| c.kelfs.get(k)).and_then(|k| k.arch);
    let model = runtime_model(arch);
    let definition_of = |graph: &str| {
        kelfs
            .iter()
            .filter_map(|k| c.kelfs.get(k))
            .flat_map(|k| k.graphs.iter())
            .find(|(n, _)| n == graph)
            .map(|(_, d)| d)
    };
    let io_bytes: u64 = match &c.neff {
        Some((_, inputs, outputs)) => inputs.iter().chain(outputs).map(|t| t.size).fold(0, u64::saturating_add),
        None => 0,
    };
    let mut subgraphs: Vec<_> = pass.report.subgraphs.iter().collect();
    subgraphs.sort_by_key(|s| s.core);
    let cores = subgraphs
        .into_iter()
        .enumerate()
        .map(|(position, s)| {
            let virtual_extent = definition_of(&s.name).and_then(|d| extents.0.get(d)).copied().unwrap_or(0);
            let facts = SubgraphFacts { placed: s.bytes_by_usage, virtual_extent };
            let mut from_neff = facts.placed;
            *at(&mut from_neff, UsageClass::Scratchpad) += virtual_extent;
            if position == 0 {
                *at(&mut from_neff, UsageClass::Tensor) += io_bytes;
            }
            CoreMem {
                core: s.core,
                subgraph: s.name.clone(),
                from_neff,
                runtime: model.map(|m| overhead(m, position, &facts, profiling)),
            }
        })
        .collect();
    FileMem {
        file,
        target: pass.report.target.as_str().to_owned(),
        compiler_version: pass.members.as_ref().and_then(|m| m.tool_version()),
        model,
        cores,
    }
}

/// Runs the pass of `path` and models it.
pub fn mem_of_path(path: &std::path::Path, profiling: bool) -> Result<FileMem, CliError> {
    mem_of_source(crate::source::open_input(path, "mem")?, path.display().to_string(), profiling)
}

/// Runs the pass of `source` (labelled `file` in the model) and models it.
pub fn mem_of_source(source: crate::source::InputSource, file: String, profiling: bool) -> Result<FileMem, CliError> {
    let request = loading::Request { tap: Some(TapOptions::producer()), ..loading::Request::check() };
    let (pass, extents) = loading::run_observed(source, request, VirtualExtents::default())?;
    Ok(file_mem(file, &pass, &extents, profiling))
}

fn usage_map(u: &Usage) -> Value {
    let mut m = Map::new();
    for (name, bytes) in CATEGORIES.iter().zip(u) {
        m.insert((*name).to_owned(), json!(bytes));
    }
    Value::Object(m)
}

/// The `--json` object of one file.
pub fn file_json(f: &FileMem) -> Value {
    let cores: Vec<Value> = f
        .cores
        .iter()
        .map(|c| {
            json!({
                "core": c.core,
                "subgraph": c.subgraph,
                "usage": usage_map(&c.usage()),
                "from_neff": usage_map(&c.from_neff),
                "runtime_overhead": c.runtime.as_ref().map(usage_map),
                "total": c.total(),
            })
        })
        .collect();
    json!({
        "file": f.file,
        "target": f.target,
        "compiler_version": f.compiler_version,
        "runtime_overhead_source": f.model.map(|_| OVERHEAD_SOURCE),
        "cores": cores,
        "total": f.cores.iter().map(CoreMem::total).fold(0u64, u64::saturating_add),
    })
}

/// Several files on the same NeuronCores: per core position and category, the sum, except
/// the shared scratchpad, which the models of a core share (its largest).
pub fn sum(files: &[FileMem]) -> Vec<(u8, Usage)> {
    let mut out: Vec<(u8, Usage)> = Vec::new();
    for f in files {
        for c in &f.cores {
            let u = c.usage();
            let slot = match out.iter_mut().position(|(core, _)| *core == c.core) {
                Some(i) => &mut out[i].1,
                None => {
                    out.push((c.core, [0; USAGE_CLASS_COUNT]));
                    let last = out.len() - 1;
                    &mut out[last].1
                }
            };
            for (i, (a, b)) in slot.iter_mut().zip(u).enumerate() {
                *a = if i == usage_index(UsageClass::Scratchpad) { (*a).max(b) } else { a.saturating_add(b) };
            }
        }
    }
    out.sort_by_key(|(core, _)| *core);
    out
}

/// The file and core that need the most: `(file index, core, total)`.
pub fn largest(files: &[FileMem]) -> Option<(usize, u8, u64)> {
    files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.cores.iter().map(move |c| (i, c.core, c.total())))
        .max_by_key(|&(i, _, total)| (total, std::cmp::Reverse(i)))
}

/// The `--json` document.
pub fn document(files: &[FileMem]) -> Value {
    if let [one] = files {
        return file_json(one);
    }
    let sum: Vec<Value> = sum(files)
        .iter()
        .map(|(core, u)| json!({"core": core, "usage": usage_map(u), "total": u.iter().fold(0u64, |a, b| a.saturating_add(*b))}))
        .collect();
    let largest = largest(files).map(|(i, core, total)| json!({"file": files[i].file, "core": core, "total": total}));
    json!({"files": files.iter().map(file_json).collect::<Vec<_>>(), "sum": {"cores": sum}, "largest": largest})
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `12.3 MiB` beside a byte count.
pub fn mib(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64)
}

/// The human form of one file.
pub fn write_file(out: &mut String, f: &FileMem) {
    let compiler = f.compiler_version.as_deref().map_or_else(String::new, |v| format!(", compiler {v}"));
    let _ = writeln!(out, "{}: target {:?}, {} NeuronCore(s){compiler}", f.file, f.target, f.cores.len());
    match f.model {
        Some(m) => {
            let _ = writeln!(out, "runtime overhead on {}: {OVERHEAD_SOURCE}", m.arch);
        }
        None => {
            let _ =
                writeln!(out, "runtime overhead: no measured figures for this target; what the NEFF itself needs only");
        }
    }
    for c in &f.cores {
        let usage = c.usage();
        let title = format!("core {} ({})", c.core, c.subgraph);
        let _ = writeln!(out, "\n{title:<24} {:>14} {:>14} {:>16}", "from NEFF", "runtime", "total");
        for (i, name) in CATEGORIES.iter().enumerate() {
            if usage[i] == 0 {
                continue;
            }
            let runtime = c.runtime.map_or(0, |r| r[i]);
            let dash = |n: u64| if n == 0 { "-".to_owned() } else { thousands(n) };
            let note = if c.from_neff[i] == 0 { "  (runtime)" } else { "" };
            let _ = writeln!(
                out,
                "  {:<22} {:>14} {:>14} {:>16}{note}",
                name,
                dash(c.from_neff[i]),
                dash(runtime),
                thousands(usage[i])
            );
        }
        let neff: u64 = c.from_neff.iter().sum();
        let runtime: u64 = c.runtime.map_or(0, |r| r.iter().sum());
        let _ = writeln!(
            out,
            "  {:<22} {:>14} {:>14} {:>16}  ({})",
            "total",
            thousands(neff),
            thousands(runtime),
            thousands(c.total()),
            mib(c.total())
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_follow_the_usage_classes() {
        assert_eq!(CATEGORIES[usage_index(UsageClass::Weight)], "Weights");
        assert_eq!(CATEGORIES[usage_index(UsageClass::InstrPe)], "Tensor Instructions");
        assert_eq!(CATEGORIES[usage_index(UsageClass::ActTable)], "Scalar Table");
        assert_eq!(CATEGORIES[usage_index(UsageClass::Notification)], "Profiler Buffers");
        assert_eq!(CATEGORIES[usage_index(UsageClass::Scratchpad)], "Shared Scratchpad");
        assert_eq!(CATEGORIES[usage_index(UsageClass::ScratchpadNotShared)], "Scratchpad");
        assert_eq!(CATEGORIES[usage_index(UsageClass::DmaRingCollectives)], "DMA Rings Collectives");
    }

    #[test]
    fn the_overhead_follows_what_the_core_holds() {
        let mut facts = SubgraphFacts::default();
        facts.placed[usage_index(UsageClass::InstrPe)] = 128;
        let first = overhead(&TRN2, 0, &facts, false);
        let second = overhead(&TRN2, 1, &facts, true);
        assert_eq!(first[usage_index(UsageClass::InstrPe)], 6656);
        assert_eq!(second[usage_index(UsageClass::InstrPe)], 6592);
        // No stream, no instruction overhead; no tables, no Scalar Table.
        assert_eq!(first[usage_index(UsageClass::InstrAct)], 0);
        assert_eq!(first[usage_index(UsageClass::ActTable)], 0);
        assert_eq!(first[usage_index(UsageClass::Io)], 8);
        assert_eq!(second[usage_index(UsageClass::Io)], 0);
        assert_eq!(first[usage_index(UsageClass::Notification)], 0);
        assert_eq!(second[usage_index(UsageClass::Notification)], TRN2.profiler_buffers);
        assert_eq!(first[usage_index(UsageClass::Scratchpad)], 0);
        // A scratchpad extent rounds up to whole pages.
        facts.virtual_extent = TRN2.scratchpad_page + 1;
        let u = overhead(&TRN2, 0, &facts, false);
        assert_eq!(u[usage_index(UsageClass::Scratchpad)] + facts.virtual_extent, 2 * TRN2.scratchpad_page);
    }

    #[test]
    fn sums_share_the_scratchpad_and_largest_picks_a_core() {
        let core = |core, weights, scratch| {
            let mut from_neff = [0; USAGE_CLASS_COUNT];
            from_neff[usage_index(UsageClass::Weight)] = weights;
            from_neff[usage_index(UsageClass::Scratchpad)] = scratch;
            CoreMem { core, subgraph: format!("sg0{core}"), from_neff, runtime: None }
        };
        let file = |name: &str, cores| FileMem {
            file: name.into(),
            target: "cayman".into(),
            compiler_version: None,
            model: None,
            cores,
        };
        let files = [file("a", vec![core(0, 10, 100), core(1, 1, 0)]), file("b", vec![core(0, 5, 300)])];
        let s = sum(&files);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].1[usage_index(UsageClass::Weight)], 15);
        assert_eq!(s[0].1[usage_index(UsageClass::Scratchpad)], 300);
        assert_eq!(s[1].1[usage_index(UsageClass::Weight)], 1);
        assert_eq!(largest(&files), Some((1, 0, 305)));
        assert_eq!(thousands(1_744_584), "1,744,584");
        assert_eq!(thousands(8), "8");
        assert_eq!(thousands(100_000), "100,000");
    }
}
