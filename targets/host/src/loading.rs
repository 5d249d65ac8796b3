//! Running the core loader on the host: one streaming pass over a NEFF, with or without the
//! simulated device, collecting what `info` prints from the parsed manifests as they pass.
//!
//! The core's [`neff::loader::Loader`] keeps what binding needs in an arena this module lends
//! ([`ARENA_BYTES`] of address space, allocated zeroed, so only the pages a load touches cost
//! memory: spec §15.20 wants no valid NEFF refused for its size on a host, and this is room
//! for millions of weights). Everything else the core streams: the observer here collects
//! what `info` prints. The input streams through the source's fixed buffer and is inflated by
//! zlib-rs, in a thread of its own on a host with two cores or more ([`crate::inflate`]); what
//! grows with the NEFF is the simulated device's memory and, for `info`, the collected tables.
//!
//! The simulated device of a `load` has the arch `--arch` pins, or else the NEFF's own: the
//! target of the chain's first KELF ([`DeviceArch::NeffTarget`]). That target is known only
//! once the KELF has streamed past, and the loader needs the device's arch only when it binds,
//! after the archive (the target gate and the target's rules apply there; see
//! [`neff::hal::Hal::device_arch`]). So the arch is learnt on the way, in the one pass: the
//! observer notes the chain's first KELF target as `neff.json` and the KELFs are read
//! ([`Collected::neff_target`]), and the device ([`LearntArch`]) answers with it when asked.

use std::cell::Cell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use neff::archive::OpenOptions;
use neff::hal::{AllocRequest, Hal, HalError, RegionId, USAGE_CLASS_COUNT};
use neff::header::HeaderWarning;
use neff::loader::{
    LoadOptions, LoadReport, Loader, Manifest, NoObserver, Observer, PayloadReport, PayloadState, Storage,
    SubgraphReport,
};
use neff::manifest::def::{EngineKey, ENGINE_KEYS};
use neff::manifest::{Arch, Entry, IoKind, IoTensor, UsageClass};
use neff::sim::SimDevice;
use neff::{Stage, WarningKind};

use crate::error::{print_warning, CliError};
use crate::header_view::HeaderView;
use crate::inflate::{open_archive_with, Inflation};
use crate::source::{Again, InputSource};
use crate::tap::{MemberLog, TapHandle, TapOptions, Tapped, Tee};

/// Stack of the thread the loader runs on (the manifest slots and the archive reader live in
/// the loader's frames).
pub const LOADER_STACK: usize = 64 << 20;
/// Regions the simulated device can track (every payload, and staging regions, take one).
pub const DEVICE_REGIONS: usize = 8192;
/// The arena lent to the loader: 256 MiB of address space, of which a load touches only what
/// it uses (`LoadReport::arena_peak`: a few KiB for the real NEFFs).
pub const ARENA_BYTES: usize = 256 << 20;
/// The replay store lent to the loader: 256 MiB of address space for the bytes of members met
/// before the manifest naming them, kept until the chain names them (touched only as far as
/// they need: the JSON members of a NEFF, at most).
pub const REPLAY_BYTES: usize = 256 << 20;
/// Error slots lent to the loader for members read before the manifest naming them, whose
/// reading failed (kept until the chain says whether it reaches them; 296 bytes each).
pub const DEFERRED_SLOTS: usize = 4096;

/// Room for the whole member names and key paths of failures (`Storage::whole_names`): error
/// lines print them whole however long they are (a PAX path can run to thousands of bytes).
pub const WHOLE_NAMES_BYTES: usize = 1 << 20;

/// The CLI error of a load's error `e`, its line printing the names the loader noted whole
/// ([`whole_line`]).
fn whole(loader: &Loader<'_>, e: neff::Error, again: Option<&Again>) -> CliError {
    let (line, fault) = whole_line(loader, &e, again);
    match CliError::from_core(e, line) {
        CliError::Rejected { message, hints, .. } => {
            CliError::Rejected { message, hints, fault: Some(Box::new(fault)) }
        }
        other => other,
    }
}

/// The line and fields of a load's error `e`: the member and key path the loader noted whole,
/// and, when the input can be read again ([`crate::located`]), the names its kind keeps only
/// in part: a missing member whole, with its var's name in the key path, or the string at
/// the key path whole (a library named twice).
fn whole_line(loader: &Loader<'_>, e: &neff::Error, again: Option<&Again>) -> (String, crate::error::Fault) {
    let whole = loader.whole_names(e);
    let mut fault = crate::error::Fault::of(e, whole.member(), whole.key_path());
    let mut line = whole.to_string();
    let missing = match e.kind {
        neff::ErrorKind::Chain(neff::error::ChainError::MemberMissing { member }) => Some(member),
        _ => None,
    };
    // A text the kind keeps in part prints with a leading `…`.
    let cut = fault.reason.split_whitespace().find(|w| w.starts_with('…')).map(str::to_owned);
    let (Some(again), Some(by), Some(path)) = (again, fault.member.clone(), fault.key_path.clone()) else {
        return (line, fault);
    };
    if missing.is_none() && cut.is_none() {
        return (line, fault);
    }
    let Some(doc) = crate::located::manifest(again, &by) else { return (line, fault) };
    let found = match (missing, cut) {
        (Some(member), _) => {
            crate::located::locate(&doc, &by, &path, &member).map(|s| (s.key_path, member.to_string(), s.member))
        }
        (None, Some(shown)) => {
            let tail = shown.trim_start_matches('…');
            let value = crate::located::value_at(&doc, &path).filter(|v| v.ends_with(tail) && v.len() > tail.len());
            value.map(|v| (path.clone(), shown.clone(), v))
        }
        (None, None) => None,
    };
    let Some((new_path, shown, whole)) = found else { return (line, fault) };
    let (old_at, new_at) = (format!(": {path}: "), format!(": {new_path}: "));
    if let Some(at) = line.find(&old_at) {
        // Replaced after the key path only: the member the error is about precedes it.
        let (head, tail) = line.split_at(at);
        let tail = tail.replacen(&old_at, &new_at, 1).replacen(&shown, &whole, 1);
        line = format!("{head}{tail}");
    }
    fault.reason = fault.reason.replacen(&shown, &whole, 1);
    fault.key_path = Some(new_path);
    (line, fault)
}

/// The simulated device on the host.
pub type HostDevice<'m> = SimDevice<'m, DEVICE_REGIONS>;

/// The arch of a simulated device whose NEFF's target is `*` (or which has no KELF): a Trn2.
pub const DEFAULT_ARCH: Arch = Arch::Cayman;

/// Where the payloads go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Nowhere: everything a load checks, no device (`info`, `check`). With an arch, its
    /// target gate and rules apply.
    Check(Option<Arch>),
    /// A simulated device storing every byte in `bytes` of host memory.
    Memory {
        /// The device's arch.
        arch: DeviceArch,
        /// Its memory size.
        bytes: u64,
    },
    /// A simulated device keeping allocation records and digests only.
    DigestOnly {
        /// The device's arch.
        arch: DeviceArch,
        /// Its address-space size.
        capacity: u64,
    },
}

/// Which arch a simulated device has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceArch {
    /// This one, whatever the NEFF (`--arch`): the KELF target gate applies.
    Pinned(Arch),
    /// The NEFF's own: the target of its chain's first KELF, learnt as the KELF is read
    /// ([`DEFAULT_ARCH`] for a target `*`).
    NeffTarget,
}

/// Where a simulated device's arch came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchSource {
    /// `--arch`.
    Pinned,
    /// The NEFF's KELF target.
    NeffTarget,
    /// [`DEFAULT_ARCH`]: the NEFF's target is `*` (any arch), or it has none.
    Default,
}

impl ArchSource {
    /// The name in `load --json` (`device.arch_source`).
    pub fn as_str(self) -> &'static str {
        match self {
            ArchSource::Pinned => "--arch",
            ArchSource::NeffTarget => "neff-target",
            ArchSource::Default => "default",
        }
    }
}

/// The simulated device after a load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSummary {
    /// `memory` or `digest-only`.
    pub mode: &'static str,
    /// The device's arch.
    pub arch: Arch,
    /// Where it came from.
    pub arch_source: ArchSource,
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
    /// The arch of the target; `None` for `*`.
    pub target_arch: Option<Arch>,
    /// `(name, definition)` of each graph, in order.
    pub graphs: Vec<(String, String)>,
}

/// One variable of a `def.json` (serialised as `info --json` prints it: the contract's keys,
/// in its order).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct VarInfo {
    /// Its name (the key in `var`).
    pub name: String,
    /// `type` as written.
    #[serde(rename = "type")]
    pub var_type: std::borrow::Cow<'static, str>,
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

/// One DMA queue set of a `def.json` (serialised as `info --json` prints it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct QueueInfo {
    /// Its name (the key in `dma_queue`).
    pub name: String,
    /// `type` as written.
    #[serde(rename = "type")]
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

/// One state-buffer carveout (serialised as `info --json` prints it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CarveoutInfo {
    /// `type` as written.
    #[serde(rename = "type")]
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

/// `fp8_conversion_config` (serialised as `info --json` prints it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
    pub engines: Vec<(EngineKey, String, Option<String>)>,
    /// Carveouts, in order.
    pub carveouts: Vec<CarveoutInfo>,
    /// The FP8 policy.
    pub fp8: Option<Fp8Info>,
}

/// One I/O tensor of `neff.json` (serialised as `info --json` prints it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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

/// One payload as the core reported it, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadInfo {
    /// The member's path in the tar.
    pub member: String,
    /// Its position among the payload members (the tar order).
    pub seq: u32,
    /// Its core.
    pub core: Option<u8>,
    /// Its usage class.
    pub usage: UsageClass,
    /// Bytes that landed.
    pub len: u64,
    /// Size of the member in the tar.
    pub member_len: u64,
    /// Digest of the bytes that landed.
    pub digest: u64,
    /// Its device region.
    pub region: Option<RegionId>,
    /// Its device address.
    pub address: Option<u64>,
    /// What became of it.
    pub state: PayloadState,
}

impl PayloadInfo {
    /// The core's view again (for its JSON form).
    pub fn as_report(&self) -> PayloadReport<'_> {
        PayloadReport {
            member: &self.member,
            seq: self.seq,
            core: self.core,
            usage: self.usage,
            len: self.len,
            member_len: self.member_len,
            digest: self.digest,
            region: self.region,
            address: self.address,
            state: self.state,
        }
    }
}

/// One subgraph's accounting as the core reported it, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubgraphInfo {
    /// The graph name.
    pub name: String,
    /// Its core.
    pub core: u8,
    /// Regions placed for it.
    pub allocations: u32,
    /// Bytes placed for it.
    pub bytes_placed: u64,
    /// Bytes by usage class.
    pub bytes_by_usage: [u64; USAGE_CLASS_COUNT],
}

impl SubgraphInfo {
    /// The core's view again (for its JSON form).
    pub fn as_report(&self) -> SubgraphReport<'_> {
        SubgraphReport {
            name: &self.name,
            core: self.core,
            allocations: self.allocations,
            bytes_placed: self.bytes_placed,
            bytes_by_usage: self.bytes_by_usage,
        }
    }
}

/// The core's summary plus the placements it streamed.
#[derive(Debug, Clone, Default)]
pub struct HostReport {
    /// The core's fixed-size summary.
    pub summary: LoadReport,
    /// Payloads, in tar order.
    pub payloads: Vec<PayloadInfo>,
    /// Subgraphs, in core order.
    pub subgraphs: Vec<SubgraphInfo>,
}

impl std::ops::Deref for HostReport {
    type Target = LoadReport;
    fn deref(&self) -> &LoadReport {
        &self.summary
    }
}

impl HostReport {
    /// Total bytes placed on the device.
    pub fn bytes_placed(&self) -> u64 {
        self.subgraphs.iter().map(|s| s.bytes_placed).sum()
    }
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
    /// Manifest members parsed, each once: a member read twice (first as the kind its name
    /// suggests, then again as the kind the chain names it) or present twice is one.
    pub manifests: u32,
    /// The members counted in [`Collected::manifests`].
    manifest_members: std::collections::HashSet<String>,
    /// The placements and accounting the core reported.
    pub payloads: Vec<PayloadInfo>,
    /// Subgraph accounting the core reported.
    pub subgraphs: Vec<SubgraphInfo>,
    /// Streamed entries of the member being read, until its manifest arrives.
    pending: Pending,
    /// Keep the manifests' entries (vars, queues, ...): `info` prints them; `check` and `load`
    /// do not, and keep nothing that grows with the manifests.
    pub details: bool,
}

/// Vars per chunk of [`Pending::vars`].
const VAR_CHUNK: usize = 4096;

/// What a manifest's streamed entries give `info`, kept until the manifest itself arrives.
#[derive(Debug, Default, Clone)]
struct Pending {
    member: String,
    /// In chunks of [`VAR_CHUNK`]: a growing `Vec` would hold its old and new buffers at once
    /// (three times the vars) each time it doubles.
    vars: Vec<Vec<VarInfo>>,
    queues: Vec<QueueInfo>,
    carveouts: Vec<CarveoutInfo>,
    graphs: Vec<(String, String)>,
    kelfs: Vec<(String, bool)>,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
}

impl Pending {
    /// The chunk the next var goes into.
    fn var_slot(&mut self) -> &mut Vec<VarInfo> {
        if self.vars.last().is_none_or(|c| c.len() == VAR_CHUNK) {
            self.vars.push(Vec::with_capacity(VAR_CHUNK));
        }
        let last = self.vars.len() - 1;
        &mut self.vars[last]
    }
}

fn tensor(t: &IoTensor<'_>) -> TensorInfo {
    TensorInfo {
        name: t.name.to_owned(),
        dtype: t.dtype.to_owned(),
        nrt_dtype: t.nrt_dtype.value(),
        shape: t.shape.iter().map(|&d| u64::from(d)).collect(),
        size: t.size,
    }
}

impl Collected {
    /// The pending entries of `member` (a new member starts afresh: a failed read leaves
    /// nothing behind for the next one).
    fn pending(&mut self, member: &str) -> &mut Pending {
        if self.pending.member != member {
            self.pending = Pending { member: member.to_owned(), ..Pending::default() };
        }
        &mut self.pending
    }

    /// The NEFF's own target as far as it is read: the target of the chain's first KELF
    /// ([`chain_kelfs`]); `None` for `*`, or while that KELF is not read yet. Once the
    /// archive is read, the target the loader binds with.
    pub fn neff_target(&self) -> Option<Arch> {
        let first = chain_kelfs(self).into_iter().next()?;
        self.kelfs.get(&first)?.target_arch
    }

    fn take_pending(&mut self, member: &str) -> Pending {
        let p = std::mem::take(&mut self.pending);
        if p.member == member {
            p
        } else {
            Pending::default()
        }
    }
}

impl Observer for Collected {
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        if !self.details && matches!(entry, Entry::Var(_) | Entry::DmaQueue(_) | Entry::Carveout(_)) {
            return;
        }
        let p = self.pending(member);
        match *entry {
            Entry::Var(v) => p.var_slot().push(VarInfo {
                name: v.name.to_string(),
                // A known type is the map's own string: 100,000 vars need no 100,000 copies.
                var_type: match v.mr_type() {
                    Some(t) if t.as_str() == v.var_type.as_str() => std::borrow::Cow::Borrowed(t.as_str()),
                    _ => std::borrow::Cow::Owned(v.var_type.to_string()),
                },
                mr_type: v.mr_type_value(),
                var_id: v.var_id,
                size: v.size,
                alignment: v.alignment,
                file_name: v.file_name.as_ref().map(|f| f.to_string()),
                backing_variable_off: v.backing_variable_off,
            }),
            Entry::DmaQueue(q) => p.queues.push(QueueInfo {
                name: q.name.to_string(),
                queue_type: q.queue_type.to_string(),
                ring_type: q.ring_type().map(|r| r.value()),
                owner: q.owner.as_ref().map(|o| o.to_string()),
                num_queues: q.num_queues,
                semaphores: q.semaphores().to_vec(),
            }),
            Entry::Carveout(c) => p.carveouts.push(CarveoutInfo {
                carveout_type: c.carveout_type.to_string(),
                offset: c.offset,
                size: c.size,
                start_partition: c.start_partition,
                num_partitions: c.num_partitions,
            }),
            Entry::Graph(g) => p.graphs.push((g.name.to_string(), g.definition.to_string())),
            Entry::Node(n) => {
                if let (Some(mark), Some(kelf)) =
                    (neff::manifest::neff::kelf_mark(n), neff::manifest::neff::kelf_member(n))
                {
                    p.kelfs.push((kelf.to_owned(), mark == neff::manifest::KelfMark::FuncName));
                }
            }
            _ => {}
        }
    }

    fn io_tensor(&mut self, t: &IoTensor<'_>) {
        let p = &mut self.pending;
        match t.kind {
            IoKind::Input => p.inputs.push(tensor(t)),
            IoKind::Output => p.outputs.push(tensor(t)),
        }
    }

    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        if self.manifest_members.insert(member.to_owned()) {
            self.manifests += 1;
        }
        let pending = self.take_pending(member);
        match manifest {
            Manifest::Neff(_) => {
                // The KELF nodes by func name where any has it, else by op (as the core selects).
                let by_func = pending.kelfs.iter().any(|(_, f)| *f);
                let kelfs = pending.kelfs.into_iter().filter(|(_, f)| *f == by_func).map(|(k, _)| k).collect();
                self.neff = Some((kelfs, pending.inputs, pending.outputs));
            }
            Manifest::Kelf(doc) => {
                let info = KelfInfo {
                    version: doc.version.to_string(),
                    target: doc.target.as_ref().map(|t| t.to_string()),
                    arch: doc.arch_value().map(Arch::value),
                    target_arch: doc.arch_value(),
                    graphs: pending.graphs,
                };
                self.kelfs.insert(member.to_owned(), info);
            }
            Manifest::Def(doc, _) => {
                // Into one exactly sized `Vec`, each chunk freed as it is moved.
                let mut vars = Vec::with_capacity(pending.vars.iter().map(Vec::len).sum());
                for chunk in pending.vars {
                    vars.extend(chunk);
                }
                vars.sort_by_key(|v| v.var_id);
                let mut dma_queues = pending.queues;
                dma_queues.sort_by(|a, b| a.name.cmp(&b.name));
                let engines = ENGINE_KEYS
                    .iter()
                    .filter_map(|&e| {
                        doc.engine_member(e).map(|json| (e, json.to_owned(), doc.engine_stream(e).map(str::to_owned)))
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
                let info = DefInfo {
                    version: doc.version.as_ref().map(|v| v.to_string()),
                    vars,
                    dma_queues,
                    engines,
                    carveouts: pending.carveouts,
                    fp8,
                };
                self.defs.insert(member.to_owned(), info);
            }
            Manifest::Engine(doc) => {
                self.engine_instr.insert(member.to_owned(), doc.instr.as_ref().map(|i| i.to_string()));
            }
        }
    }

    fn payload(&mut self, p: &PayloadReport<'_>) {
        self.payloads.push(PayloadInfo {
            member: p.member.to_owned(),
            seq: p.seq,
            core: p.core,
            usage: p.usage,
            len: p.len,
            member_len: p.member_len,
            digest: p.digest,
            region: p.region,
            address: p.address,
            state: p.state,
        });
    }

    fn subgraph(&mut self, s: &SubgraphReport<'_>) {
        self.subgraphs.push(SubgraphInfo {
            name: s.name.to_owned(),
            core: s.core,
            allocations: s.allocations,
            bytes_placed: s.bytes_placed,
            bytes_by_usage: s.bytes_by_usage,
        });
    }
}

/// The observer of a load onto a device: [`Collected`], which also notes the NEFF's target
/// in `target` each time `neff.json` or a KELF is read (the device answers with it).
struct Learning<'a, 'b, D: Observer + ?Sized> {
    observer: &'a mut Tee<'b, Collected, D>,
    target: &'a Cell<Option<Arch>>,
}

impl<D: Observer + ?Sized> Observer for Learning<'_, '_, D> {
    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.observer.manifest(member, manifest);
        if matches!(manifest, Manifest::Neff(_) | Manifest::Kelf(_)) {
            self.target.set(self.observer.0.neff_target());
        }
    }
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        self.observer.entry(member, entry);
    }
    fn io_tensor(&mut self, tensor: &IoTensor<'_>) {
        self.observer.io_tensor(tensor);
    }
    fn payload(&mut self, payload: &PayloadReport<'_>) {
        self.observer.payload(payload);
    }
    fn subgraph(&mut self, subgraph: &SubgraphReport<'_>) {
        self.observer.subgraph(subgraph);
    }
}

/// The simulated device with its arch pinned, or learnt from the NEFF as it streams
/// ([`DeviceArch`]): the loader asks for the arch when it binds, after the KELF is read.
struct LearntArch<'d, 'm> {
    dev: &'d mut HostDevice<'m>,
    arch: DeviceArch,
    learnt: &'d Cell<Option<Arch>>,
}

impl LearntArch<'_, '_> {
    /// The arch now, and where it comes from.
    fn current(&self) -> (Arch, ArchSource) {
        match (self.arch, self.learnt.get()) {
            (DeviceArch::Pinned(arch), _) => (arch, ArchSource::Pinned),
            (DeviceArch::NeffTarget, Some(arch)) => (arch, ArchSource::NeffTarget),
            (DeviceArch::NeffTarget, None) => (DEFAULT_ARCH, ArchSource::Default),
        }
    }

    fn summary(&self, mode: &'static str) -> DeviceSummary {
        let (arch, arch_source) = self.current();
        DeviceSummary {
            mode,
            arch,
            arch_source,
            capacity: self.dev.capacity(),
            live_bytes: self.dev.live_bytes(),
            peak_bytes: self.dev.peak_bytes(),
            live_regions: self.dev.live_regions().count(),
        }
    }
}

impl Hal for LearntArch<'_, '_> {
    type Error = neff::hal::HalError;

    fn arch(&self) -> Arch {
        self.current().0
    }
    fn alloc(&mut self, req: &AllocRequest) -> Result<RegionId, HalError> {
        self.dev.alloc(req)
    }
    fn write(&mut self, region: RegionId, offset: u64, bytes: &[u8]) -> Result<(), HalError> {
        self.dev.write(region, offset, bytes)
    }
    fn adopt(&mut self, staged: RegionId, req: &AllocRequest) -> Result<RegionId, HalError> {
        self.dev.adopt(staged, req)
    }
    fn release(&mut self, region: RegionId) -> Result<(), HalError> {
        self.dev.release(region)
    }
    fn address(&self, region: RegionId) -> Result<u64, HalError> {
        self.dev.address(region)
    }
    fn keeps_nothing(&self) -> bool {
        self.dev.keeps_nothing()
    }
    fn notebook_len(&self) -> u64 {
        self.dev.notebook_len()
    }
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), HalError> {
        self.dev.note(at, bytes)
    }
    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), HalError> {
        self.dev.recall(at, out)
    }
}

/// Loads `archive` onto `sim`, its arch as `arch` says; the device's figures after.
#[allow(clippy::too_many_arguments)]
fn load_onto(
    loader: &mut Loader<'_>,
    archive: &mut neff::archive::Archive<Tapped<crate::inflate::HostTar>>,
    sim: &mut HostDevice<'_>,
    arch: DeviceArch,
    mode: &'static str,
    summary: &mut LoadReport,
    observer: &mut Tee<'_, Collected, impl Observer + ?Sized>,
    sink: &mut impl neff::error::WarningSink,
    again: Option<&Again>,
) -> Result<DeviceSummary, CliError> {
    let learnt = Cell::new(None);
    let mut dev = LearntArch { dev: sim, arch, learnt: &learnt };
    let mut observer = Learning { observer, target: &learnt };
    loader.load(archive, &mut dev, summary, &mut observer, sink).map_err(|e| whole(loader, e, again))?;
    Ok(dev.summary(mode))
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
    /// The same warnings field by field (for bindings: code, stage, member, key path), when
    /// [`PassOptions::keep_warning_records`] asked for them.
    pub warning_records: Vec<neff::Warning>,
    /// What the tar tap saw (`None` for a pass without one; see [`crate::tap`]).
    pub members: Option<MemberLog>,
    /// The refusal a [`PassOptions::keep_going`] check went on after, as printed.
    pub refusal: Option<String>,
}

/// What a pass is asked for besides its target.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// Accept what `NEURON_RT_ALLOW_LEGACY_NEFF=1` accepts (`--allow-legacy`).
    pub allow_legacy: bool,
    /// Verify the header hash while the payload streams (`--verify`): the outcome is in
    /// [`Pass::finish`], and a mismatch ends the pass with the rejection of
    /// [`crate::integrity::mismatch_error`] instead of a warning.
    pub verify: bool,
    /// A check that the manifests refuse (the archive itself sound: header, gzip and tar read
    /// to the end) is not the pass's error: the refusal is printed as a warning, kept in
    /// [`Pass::refusal`], and the pass ends with what was read (the tools that show *why* a
    /// NEFF is refused: `ls`, `diff`).
    pub keep_going: bool,
    /// Keep each warning field by field as well as printed ([`Pass::warning_records`], and
    /// a refusal's [`Fault`](crate::error::Fault)): for bindings, which hand warnings on as
    /// objects. Off, a NEFF with many warnings (15,312 for a member added twice, 320 times)
    /// costs no memory for them beyond their lines.
    pub keep_warning_records: bool,
}

/// Runs the loader over `source` (a NEFF of `size` bytes) on a thread with a large stack.
pub fn run(source: InputSource, size: u64, target: Target, options: PassOptions) -> Result<Pass, CliError> {
    run_with(source, size, target, options, Inflation::for_this_host(size))
}

/// `neff info`'s pass: a check that keeps every manifest entry `info` prints, and `info.json`
/// (the compiler's version) from the tar tap.
pub fn run_info(source: InputSource, size: u64, options: PassOptions) -> Result<Pass, CliError> {
    let inflation = Inflation::for_this_host(size);
    let tap = Some(TapOptions::producer());
    spawn(move || run_here(source, size, Target::Check(None), options, inflation, true, tap, &mut NoObserver))
}

/// A pass whose observations also go to `extra` (after the pass's own collection), with the
/// tar tap `tap` when given ([`Pass::members`]). `details` keeps the manifests' entries in
/// [`Collected`] as `info` does; an `extra` that keeps only what it needs keeps memory flat.
pub fn run_observed<O: Observer + Send + 'static>(
    source: InputSource,
    size: u64,
    target: Target,
    details: bool,
    tap: Option<TapOptions>,
    options: PassOptions,
    mut extra: O,
) -> Result<(Pass, O), CliError> {
    let inflation = Inflation::for_this_host(size);
    spawn(move || {
        let pass = run_here(source, size, target, options, inflation, details, tap, &mut extra)?;
        Ok((pass, extra))
    })
}

/// [`run`], inflating as `inflation` says (tests compare both ways).
pub fn run_with(
    source: InputSource,
    size: u64,
    target: Target,
    options: PassOptions,
    inflation: Inflation,
) -> Result<Pass, CliError> {
    spawn(move || run_here(source, size, target, options, inflation, false, None, &mut NoObserver))
}

/// Runs `pass` on a thread with a large stack ([`LOADER_STACK`]).
///
/// A caller that keeps its warnings ([`crate::error::capture_warnings`]: one of several files
/// checked at once) gets the pass's warnings kept too, in the order they were raised.
fn spawn<T: Send + 'static>(pass: impl FnOnce() -> Result<T, CliError> + Send + 'static) -> Result<T, CliError> {
    let keep = crate::error::capturing_warnings();
    let worker = std::thread::Builder::new()
        .name("neff-loader".into())
        .stack_size(LOADER_STACK)
        .spawn(move || if keep { crate::error::capture_warnings(pass) } else { (pass(), Vec::new()) })
        .map_err(|e| CliError::usage(format!("cannot start the loader thread: {e}")))?;
    match worker.join() {
        Ok((result, warnings)) => {
            crate::error::keep_warnings(warnings);
            result
        }
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// [`run_pass`], with the warnings raised before a refusal kept in its [`Fault`](crate::error::Fault).
#[allow(clippy::too_many_arguments)]
fn run_here(
    source: InputSource,
    size: u64,
    target: Target,
    options: PassOptions,
    inflation: Inflation,
    details: bool,
    tap: Option<TapOptions>,
    extra: &mut dyn Observer,
) -> Result<Pass, CliError> {
    let mut warning_records = Vec::new();
    run_pass(source, size, target, options, inflation, details, tap, extra, &mut warning_records).map_err(|mut e| {
        if let CliError::Rejected { fault: Some(fault), .. } = &mut e {
            fault.warnings = warning_records;
        }
        e
    })
}

#[allow(clippy::too_many_arguments)]
fn run_pass(
    source: InputSource,
    size: u64,
    target: Target,
    options: PassOptions,
    inflation: Inflation,
    details: bool,
    tap: Option<TapOptions>,
    extra: &mut dyn Observer,
    warning_records: &mut Vec<neff::Warning>,
) -> Result<Pass, CliError> {
    let PassOptions { allow_legacy, verify, keep_going, keep_warning_records } = options;
    let again = source.again();
    let mut warnings = Vec::new();
    let mut sink = |w: &neff::Warning| {
        // Asked for, a mismatch is the pass's error (with both values), not also a warning.
        if verify && matches!(w.kind, WarningKind::Header(HeaderWarning::IntegrityMismatch { .. })) {
            return;
        }
        let text = w.to_string();
        print_warning(&text);
        warnings.push(text);
        if keep_warning_records {
            warning_records.push(*w);
        }
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
    let mut tap_handle: Option<TapHandle> = None;
    let wrap = |tar| match tap {
        Some(options) => {
            let (tapped, handle) = Tapped::with_tap(tar, options);
            tap_handle = Some(handle);
            tapped
        }
        None => Tapped::plain(tar),
    };
    let open = OpenOptions { verify_integrity: verify, ..OpenOptions::default() };
    let mut archive = open_archive_with(source, size, &open, inflation, &mut sink, wrap)?;
    let header = HeaderView::from(archive.header());
    // Zeroed by the allocator: pages the load never touches cost no memory.
    let mut arena = vec![0u8; ARENA_BYTES];
    let mut replay = vec![0u8; REPLAY_BYTES];
    let mut deferred = vec![None; DEFERRED_SLOTS];
    let mut whole_names = vec![0u8; WHOLE_NAMES_BYTES];
    let storage =
        Storage { arena: &mut arena, replay: &mut replay, deferred: &mut deferred, whole_names: &mut whole_names };
    let mut loader = Box::new(Loader::with_storage(storage, LoadOptions { allow_legacy }));
    let mut summary = LoadReport::new();
    // Only `info` (a check whose observer keeps the details) prints the manifests' entries.
    let mut collected = Collected { details, ..Collected::default() };
    let mut observer = Tee(&mut collected, extra);
    let mut refusal = None;
    let device = match target {
        Target::Check(arch) => {
            match loader.check(&mut *archive, arch, &mut summary, &mut observer, &mut sink) {
                Ok(()) => {}
                // The archive is sound: what the manifests refuse is shown, and the walk goes on.
                Err(e) if keep_going && !matches!(e.stage, Stage::Io | Stage::Header | Stage::Gzip | Stage::Tar) => {
                    let (line, _) = whole_line(&loader, &e, again.as_ref());
                    print_warning(&format!("refused: {line}"));
                    refusal = Some(line);
                }
                Err(e) => return Err(whole(&loader, e, again.as_ref())),
            }
            None
        }
        // The device's own arch field is the pinned one or the default; what the loader sees
        // is the wrapper's (`LearntArch`), which may learn the NEFF's target.
        Target::Memory { arch, .. } => {
            let mut dev: Box<HostDevice<'_>> = Box::new(SimDevice::new(&mut memory, arch.initial()));
            let (l, a) = (&mut *loader, &mut *archive);
            Some(load_onto(l, a, &mut dev, arch, "memory", &mut summary, &mut observer, &mut sink, again.as_ref())?)
        }
        Target::DigestOnly { arch, capacity } => {
            let mut dev: Box<HostDevice<'_>> = Box::new(SimDevice::digest_only(capacity, arch.initial()));
            let (l, a) = (&mut *loader, &mut *archive);
            Some(load_onto(
                l,
                a,
                &mut dev,
                arch,
                "digest-only",
                &mut summary,
                &mut observer,
                &mut sink,
                again.as_ref(),
            )?)
        }
    };
    let elapsed = started.elapsed();
    // The loader finished the archive; asking again returns the same figures.
    let finish = archive.finish(&mut sink)?;
    // Dropping the archive closes the tap's stream; then its walk ends.
    drop(archive);
    let members = tap_handle.map(TapHandle::finish);
    if verify {
        if let Some(e) = crate::integrity::mismatch_error(&finish.integrity) {
            return Err(e);
        }
    }
    let report = Box::new(HostReport {
        summary,
        // In tar order, as the core's reports are not (weights come last).
        payloads: {
            let mut payloads = std::mem::take(&mut collected.payloads);
            payloads.sort_by_key(|p| p.seq);
            payloads
        },
        subgraphs: std::mem::take(&mut collected.subgraphs),
    });
    let warning_records = std::mem::take(warning_records);
    Ok(Pass { header, report, collected, device, finish, elapsed, warnings, warning_records, members, refusal })
}

impl DeviceArch {
    /// The arch before the NEFF says anything: the pinned one, or [`DEFAULT_ARCH`].
    pub fn initial(self) -> Arch {
        match self {
            DeviceArch::Pinned(arch) => arch,
            DeviceArch::NeffTarget => DEFAULT_ARCH,
        }
    }
}

/// The device arch of a command-line `--arch` (its `From` is beside the flag, so the passes
/// know no command line).
pub fn arch_of(arch: impl Into<Arch>) -> Arch {
    arch.into()
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
