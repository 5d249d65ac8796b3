//! Running the core loader on the host: one streaming pass over a NEFF, with or without the
//! simulated device, collecting what `info` prints from the parsed manifests as they pass.
//!
//! The core's [`neff::loader::Loader`] with the [`Host`] capacity profile is about 1.3 MB of
//! fixed tables (plus the capacities chosen here), so it lives on the heap and runs on a
//! thread with a large stack ([`LOADER_STACK`]): the core parses manifests in place, but
//! default values may pass through the stack. The input streams through the source's
//! fixed buffer and is inflated by zlib-rs, in a thread of its own on a host with two cores or
//! more ([`crate::inflate`]); the only memory that grows with the NEFF is the simulated
//! device's.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use neff::archive::OpenOptions;
use neff::loader::{LoadOptions, Loader, Observer};
use neff::manifest::def::ENGINES;
use neff::manifest::{Arch, EngineType};
use neff::sim::SimDevice;

use crate::error::{print_warning, CliError};
use crate::header_view::HeaderView;
use crate::inflate::{open_archive, Inflation};
use crate::source::InputSource;

/// Stack of the thread the loader runs on.
pub const LOADER_STACK: usize = 64 << 20;
/// Regions the simulated device can track (every payload, and staging regions, take one).
pub const DEVICE_REGIONS: usize = 4096;
pub use neff::loader::{HostLoader, HostReport};
/// The simulated device on the host.
pub type HostDevice<'m> = SimDevice<'m, DEVICE_REGIONS>;

/// Where the payloads go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Nowhere: everything a load checks, no device (`info`, `check`). With an arch, its
    /// target gate and rules apply.
    Check(Option<Arch>),
    /// A simulated device storing every byte in `bytes` of host memory.
    Memory {
        /// The device's arch.
        arch: Arch,
        /// Its memory size.
        bytes: u64,
    },
    /// A simulated device keeping allocation records and digests only.
    DigestOnly {
        /// The device's arch.
        arch: Arch,
        /// Its address-space size.
        capacity: u64,
    },
}

/// The simulated device after a load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSummary {
    /// `memory` or `digest-only`.
    pub mode: &'static str,
    /// The device's arch.
    pub arch: Arch,
    /// Its size in bytes.
    pub capacity: u64,
    /// Bytes live at the end.
    pub live_bytes: u64,
    /// The most bytes live at once (staging included).
    pub peak_bytes: u64,
    /// Regions live at the end.
    pub live_regions: usize,
}

/// A KELF descriptor as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KelfInfo {
    /// `version` as written.
    pub version: String,
    /// `target` as written (`None` when absent, which the runtime reads as `""`, sunda).
    pub target: Option<String>,
    /// The `al_hal_tpb_arch_type` value; `None` for `*`.
    pub arch: Option<u32>,
    /// `(name, definition)` of each graph, in order.
    pub graphs: Vec<(String, String)>,
}

/// One variable of a `def.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarInfo {
    /// Its name (the key in `var`).
    pub name: String,
    /// `type` as written.
    pub var_type: String,
    /// The `kbin_mr_type` value, `None` when not published.
    pub mr_type: Option<u32>,
    /// `var_id`.
    pub var_id: u32,
    /// `size`.
    pub size: Option<u64>,
    /// `alignment`.
    pub alignment: Option<u64>,
    /// `file_name`.
    pub file_name: Option<String>,
    /// `backing_variable_off`.
    pub backing_variable_off: Option<u64>,
}

/// One DMA queue set of a `def.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInfo {
    /// Its name (the key in `dma_queue`).
    pub name: String,
    /// `type` as written.
    pub queue_type: String,
    /// The `kbin_dma_ring_type` value, `None` when not published (`dynamic`).
    pub ring_type: Option<u32>,
    /// `owner`.
    pub owner: Option<String>,
    /// `num_queues` (default 1).
    pub num_queues: u32,
    /// `semaphore_set`, or `[semaphore]`, or empty.
    pub semaphores: Vec<u32>,
}

/// One state-buffer carveout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarveoutInfo {
    /// `type` as written.
    pub carveout_type: String,
    /// `offset`.
    pub offset: u64,
    /// `size`.
    pub size: u64,
    /// `base_partition` / `start_partition`.
    pub start_partition: u64,
    /// `partitions` / `num_partitions`.
    pub num_partitions: u64,
}

/// `fp8_conversion_config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp8Info {
    /// `fp8_range_extension`.
    pub fp8_range_extension: bool,
    /// `emax_fp8_e4m3`.
    pub emax_fp8_e4m3: u32,
    /// `emax_fp8_e5m2`.
    pub emax_fp8_e5m2: u32,
    /// `ocp_sat`.
    pub ocp_sat: bool,
    /// `fp8_sis`.
    pub fp8_sis: bool,
    /// `fp8_sns`.
    pub fp8_sns: bool,
}

/// What `info` needs of a `def.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefInfo {
    /// `version` as written.
    pub version: Option<String>,
    /// Variables, by `var_id`.
    pub vars: Vec<VarInfo>,
    /// DMA queue sets, by name.
    pub dma_queues: Vec<QueueInfo>,
    /// `(engine, engine JSON, <eng>_instr)` for each engine named, in `pe act pool dve sp` order.
    pub engines: Vec<(EngineType, String, Option<String>)>,
    /// Carveouts, in order.
    pub carveouts: Vec<CarveoutInfo>,
    /// The FP8 policy.
    pub fp8: Option<Fp8Info>,
}

/// One I/O tensor of `neff.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// The tensor's name.
    pub name: String,
    /// `attrs.dltype` as written.
    pub dtype: String,
    /// Its `nrt_dtype_t` value.
    pub nrt_dtype: u32,
    /// Its shape.
    pub shape: Vec<u64>,
    /// `product(shape) * element size`.
    pub size: u64,
}

/// Everything the observer saw, keyed by member (a later copy of a member replaces an
/// earlier one, as in the loader).
#[derive(Debug, Default, Clone)]
pub struct Collected {
    /// `neff.json`'s KELF members in node order, and its inputs and outputs; `None` without
    /// a `neff.json`.
    pub neff: Option<(Vec<String>, Vec<TensorInfo>, Vec<TensorInfo>)>,
    /// KELF descriptors by member.
    pub kelfs: HashMap<String, KelfInfo>,
    /// `def.json`s by member.
    pub defs: HashMap<String, DefInfo>,
    /// The `instr` of each subgraph JSON, by member.
    pub engine_instr: HashMap<String, Option<String>>,
    /// Manifest members parsed (every copy counted).
    pub manifests: u32,
    /// A failure to collect (a capacity of the I/O table), reported after the pass.
    pub error: Option<String>,
}

fn tensors<const A: usize, const B: usize, const C: usize>(
    list: &[neff::manifest::IoTensor<A, B, C>],
) -> Vec<TensorInfo> {
    list.iter()
        .map(|t| TensorInfo {
            name: t.name.to_string(),
            dtype: t.dtype.to_string(),
            nrt_dtype: t.nrt_dtype.value(),
            shape: t.shape.iter().map(|&d| u64::from(d)).collect(),
            size: t.size,
        })
        .collect()
}

impl Observer<neff::loader::Host> for Collected {
    fn neff_json(&mut self, _member: &str, doc: &<neff::loader::Host as neff::loader::Profile>::Neff) {
        self.manifests += 1;
        let kelfs = doc.kelf_members().map(str::to_owned).collect();
        // The widest table the document's own capacities allow: names as long as its nodes'.
        match doc.io_table::<256>() {
            Ok(io) => self.neff = Some((kelfs, tensors(&io.inputs), tensors(&io.outputs))),
            Err(e) => {
                self.error = Some(format!("neff.json: {e}"));
                self.neff = Some((kelfs, Vec::new(), Vec::new()));
            }
        }
    }

    fn kelf(&mut self, member: &str, doc: &<neff::loader::Host as neff::loader::Profile>::Kelf) {
        self.manifests += 1;
        let info = KelfInfo {
            version: doc.version.to_string(),
            target: doc.target.as_ref().map(|t| t.to_string()),
            arch: doc.arch_value().map(Arch::value),
            graphs: doc.graphs.iter().map(|g| (g.name.to_string(), g.definition.to_string())).collect(),
        };
        self.kelfs.insert(member.to_owned(), info);
    }

    fn def_json(&mut self, member: &str, doc: &<neff::loader::Host as neff::loader::Profile>::Def) {
        self.manifests += 1;
        // The core sorts vars by var_id after its checks.
        let vars = doc
            .vars
            .iter()
            .map(|v| VarInfo {
                name: v.name.to_string(),
                var_type: v.var_type.to_string(),
                mr_type: v.mr_type_value(),
                var_id: v.var_id,
                size: v.size,
                alignment: v.alignment,
                file_name: v.file_name.as_ref().map(|f| f.to_string()),
                backing_variable_off: v.backing_variable_off,
            })
            .collect();
        let mut dma_queues: Vec<QueueInfo> = doc
            .dma_queues
            .iter()
            .flat_map(|m| m.iter())
            .map(|q| QueueInfo {
                name: q.name.to_string(),
                queue_type: q.queue_type.to_string(),
                ring_type: q.ring_type().map(|r| r.value()),
                owner: q.owner.as_ref().map(|o| o.to_string()),
                num_queues: q.num_queues,
                semaphores: q.semaphores().to_vec(),
            })
            .collect();
        dma_queues.sort_by(|a, b| a.name.cmp(&b.name));
        let engines = ENGINES
            .iter()
            .filter_map(|&e| {
                doc.engine_json(e).map(|json| (e, json.to_owned(), doc.engine_instr(e).map(str::to_owned)))
            })
            .collect();
        let carveouts = doc
            .carveouts
            .iter()
            .flat_map(|l| l.iter())
            .map(|c| CarveoutInfo {
                carveout_type: c.carveout_type.to_string(),
                offset: c.offset,
                size: c.size,
                start_partition: c.start_partition,
                num_partitions: c.num_partitions,
            })
            .collect();
        let fp8 = doc.fp8_conversion_config.as_ref().map(|c| Fp8Info {
            fp8_range_extension: c.fp8_range_extension,
            emax_fp8_e4m3: c.emax_fp8_e4m3,
            emax_fp8_e5m2: c.emax_fp8_e5m2,
            ocp_sat: c.ocp_sat,
            fp8_sis: c.fp8_sis,
            fp8_sns: c.fp8_sns,
        });
        let info =
            DefInfo { version: doc.version.as_ref().map(|v| v.to_string()), vars, dma_queues, engines, carveouts, fp8 };
        self.defs.insert(member.to_owned(), info);
    }

    fn subgraph_json(&mut self, member: &str, doc: &<neff::loader::Host as neff::loader::Profile>::Engine) {
        self.manifests += 1;
        self.engine_instr.insert(member.to_owned(), doc.instr.as_ref().map(|i| i.to_string()));
    }
}

/// What one pass produced.
pub struct Pass {
    /// The header.
    pub header: HeaderView,
    /// The load report.
    pub report: Box<HostReport>,
    /// What the observer collected.
    pub collected: Collected,
    /// The simulated device at the end (`None` for a check).
    pub device: Option<DeviceSummary>,
    /// The archive's closing figures (members, stream, padding).
    pub finish: neff::archive::Finish,
    /// Time from opening the archive to the end of the load.
    pub elapsed: Duration,
    /// Warnings, as printed.
    pub warnings: Vec<String>,
}

/// Runs the loader over `source` (a NEFF of `size` bytes) on a thread with a large stack.
pub fn run(source: InputSource, size: u64, target: Target, allow_legacy: bool) -> Result<Pass, CliError> {
    run_with(source, size, target, allow_legacy, Inflation::for_this_host(size))
}

/// [`run`], inflating as `inflation` says (tests compare both ways).
pub fn run_with(
    source: InputSource,
    size: u64,
    target: Target,
    allow_legacy: bool,
    inflation: Inflation,
) -> Result<Pass, CliError> {
    let worker = std::thread::Builder::new()
        .name("neff-loader".into())
        .stack_size(LOADER_STACK)
        .spawn(move || run_here(source, size, target, allow_legacy, inflation))
        .map_err(|e| CliError::usage(format!("cannot start the loader thread: {e}")))?;
    match worker.join() {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

fn run_here(
    source: InputSource,
    size: u64,
    target: Target,
    allow_legacy: bool,
    inflation: Inflation,
) -> Result<Pass, CliError> {
    let mut warnings = Vec::new();
    let mut sink = |w: &neff::Warning| {
        let text = w.to_string();
        print_warning(&text);
        warnings.push(text);
    };
    // The device memory is set up before the clock starts: the time is the load's.
    let mut memory = match target {
        Target::Memory { bytes, .. } => {
            let len = usize::try_from(bytes).map_err(|_| {
                CliError::usage(format!("--device-mem {bytes} does not fit in this host's address space"))
            })?;
            // Zeroed pages from the allocator: untouched pages cost no host memory.
            vec![0u8; len]
        }
        _ => Vec::new(),
    };
    let started = Instant::now();
    let mut archive = open_archive(source, size, &OpenOptions::default(), inflation, &mut sink)?;
    let header = HeaderView::from(archive.header());
    let mut loader: Box<HostLoader> = Box::new(Loader::new(LoadOptions { allow_legacy }));
    let mut report: Box<HostReport> = Box::default();
    let mut collected = Collected::default();
    let device = match target {
        Target::Check(arch) => {
            loader.check(&mut *archive, arch, &mut *report, &mut collected, &mut sink)?;
            None
        }
        Target::Memory { arch, .. } => {
            let mut dev: Box<HostDevice<'_>> = Box::new(SimDevice::new(&mut memory, arch));
            loader.load(&mut *archive, &mut *dev, &mut *report, &mut collected, &mut sink)?;
            Some(summary(&dev, "memory", arch))
        }
        Target::DigestOnly { arch, capacity } => {
            let mut dev: Box<HostDevice<'_>> = Box::new(SimDevice::digest_only(capacity, arch));
            loader.load(&mut *archive, &mut *dev, &mut *report, &mut collected, &mut sink)?;
            Some(summary(&dev, "digest-only", arch))
        }
    };
    let elapsed = started.elapsed();
    // The loader finished the archive; asking again returns the same figures.
    let finish = archive.finish(&mut sink)?;
    if let Some(e) = collected.error.take() {
        return Err(CliError::rejected(e));
    }
    Ok(Pass { header, report, collected, device, finish, elapsed, warnings })
}

fn summary(dev: &HostDevice<'_>, mode: &'static str, arch: Arch) -> DeviceSummary {
    DeviceSummary {
        mode,
        arch,
        capacity: dev.capacity(),
        live_bytes: dev.live_bytes(),
        peak_bytes: dev.peak_bytes(),
        live_regions: dev.live_regions().count(),
    }
}

/// The device arch of a command-line `--arch`.
pub fn arch_of(arch: crate::cli::Arch) -> Arch {
    match arch {
        crate::cli::Arch::Sunda => Arch::Sunda,
        crate::cli::Arch::Cayman => Arch::Cayman,
        crate::cli::Arch::Mariana => Arch::Mariana,
    }
}

/// The subgraph directory of a definition path (`sg00/def.json` -> `sg00`).
pub fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `dir/name`, or `name` at the root.
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// The KELF members of the chain, in order: those `neff.json` names, or without it the one
/// found by its conventional name (as the loader chooses).
pub fn chain_kelfs(collected: &Collected) -> Vec<String> {
    match &collected.neff {
        Some((kelfs, _, _)) => kelfs.clone(),
        None => ["kelf-0.json", "kelf-a.json"]
            .into_iter()
            .find(|n| collected.kelfs.contains_key(*n))
            .map(|n| vec![n.to_owned()])
            .unwrap_or_default(),
    }
}
