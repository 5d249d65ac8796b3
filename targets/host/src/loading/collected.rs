//! What a pass collects from the manifests as they stream past: the tables `info`, `mem`,
//! `ls` and `diff` print ([`Collected`], the pass's observer), and the load report it keeps.

use std::collections::HashMap;

use neff::hal::{RegionId, USAGE_CLASS_COUNT};
use neff::loader::{LoadReport, Manifest, Observer, PayloadReport, PayloadState, SubgraphReport};
use neff::manifest::{Arch, Entry, IoKind, IoTensor, UsageClass};

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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// One I/O tensor of `neff.json` (serialised as `info --json` prints it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
}

/// What a manifest's streamed entries give the host's documents (the KELF members and I/O
/// tensors of `neff.json`, a KELF's graphs), kept until the manifest itself arrives. The
/// entries that grow with a model (vars, queues, carveouts) are not kept: `info`'s document
/// is the core's (`neff::info`), logged as the pass runs.
#[derive(Debug, Default, Clone)]
struct Pending {
    member: String,
    graphs: Vec<(String, String)>,
    kelfs: Vec<(String, bool)>,
    inputs: Vec<TensorInfo>,
    outputs: Vec<TensorInfo>,
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
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }
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
        // Every entry marks its member's reading begun (a new member starts afresh).
        let p = self.pending(member);
        match *entry {
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
            // What `info` shows of a definition or an engine JSON is the core's document.
            Manifest::Def(..) | Manifest::Engine(_) => {}
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
        None => neff::loader::KELF_FALLBACK_NAMES
            .into_iter()
            .find(|n| collected.kelfs.contains_key(*n))
            .map(|n| vec![n.to_owned()])
            .unwrap_or_default(),
    }
}
