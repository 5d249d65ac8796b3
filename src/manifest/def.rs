//! Tier 3, `sgNN/def.json`: a subgraph's variables, DMA queues, engines and carveouts.
//!
//! # Wire format
//!
//! One object. `var` and `dma_queue` are objects keyed by name (not arrays); the engine keys
//! `pe act pool dve sp` name the engine JSONs and `<eng>_instr` their instruction streams (both
//! relative to the subgraph directory); `runtime_statebuffer_reservation` lists state-buffer
//! carveouts (keys `base_partition`/`start_partition` and `partitions`/`num_partitions` are
//! both accepted); the collective stream count is `num_streams` (the runtime's key) or
//! `cc_streams.num_streams` (real files); `fp8_conversion_config` is the FP8 cast policy.
//!
//! `var` and `dma_queue` are streamed: each entry is checked as it is read and handed to the
//! caller's visitor ([`Entry::Var`], [`Entry::DmaQueue`]), so a `def.json` with 100,000 vars
//! takes no more memory than one with six. The checks, as the runtime makes them: every var has
//! a `type` and a `var_id` (generated), an `alignment` is a power of two, at least one `output`
//! var exists, and when `check_var_ids` is present the ids are dense
//! (`Unexpected var_ids set! max=%u, size=%lu`, key-gated as libnrt 2.31, §15.17; duplicate ids
//! are not looked for, as the runtime does not); every queue has a `type` (generated), a known
//! `owner`, no `queue_instances` on in/out/embedding-update queues, at most 32 semaphores
//! (generated); carveout types are `evtaccel` (generated). The cayman carveout values depend on
//! the KELF target, which may be read later: [`DefFacts`] keeps the first violation and
//! [`DefFacts::check_carveouts`] applies it once the target is known.
//!
//! # Which fault is reported: libnrt's order
//!
//! libnrt parses the whole document (simdjson) and then demuxes it in a fixed key order
//! ([`DemuxStage`]: `var`, the `check_var_ids` gate, `dma_queue`, `replica_groups`,
//! `src_target_pairs`, `ext_isa_ucode_lib_def`, `ucode_lib`, the reservation, `num_streams`,
//! `dma`, `fp8_conversion_config`, the engines; seed §5, spec §7.2), so of two faults it
//! reports the one of the earlier stage, whatever the file order (real files put `dma_queue`
//! before `var`). This reader streams the file in its own order and keeps, in fixed memory, the
//! one fault libnrt would meet first among those seen: the fault of the earliest stage, the first
//! in the file within a stage (libnrt walks a stage's entries in document order). The rules on a
//! well-typed entry (a var's alignment and size, a queue's owner and counts, a ucode library's
//! version and CPUs, a descriptor's sizes) wait this way: the entry is not handed on, the read
//! goes on, and the kept fault is reported at the document's end, after the end-of-document
//! checks (dense var ids, an output var, the Extended-ISA op count), which compete by stage too.
//!
//! Some faults cannot wait; they stop the stream at once:
//!
//! - JSON syntax faults, the byte source's errors and a truncated member: the tokenizer cannot go
//!   on. libnrt loses nothing here: simdjson refuses such a document before the demux starts,
//!   so these come first for it too (the reader still skips to the end for a syntax fault).
//! - Faults of a value's type or shape that the generated reader finds (a wrong JSON type, a
//!   missing required key, a duplicate key, a number out of range, a malformed typed list, a
//!   value outside a strict map, more elements than the runtime's limit): the reader is inside
//!   the value, which has no typed form to check or hand on, and its frames unwind to stop.
//!   The report is then the earlier-stage one of this fault and the kept one; a fault of an
//!   even earlier stage later in the file is not seen, so there the report can differ from
//!   libnrt's.
//! - The caller's own errors (the loader's capacities and device, a DMA name the subgraph does
//!   not declare): they are no fault of the document's in libnrt's sense.

use embedded_io::BufRead;

use super::DocFault;
use super::{
    semantic, warn, Arch, Carveout, CarveoutType, DefJson, DmaQueue, DmaRingType, Document, EngineType, Entry, EntryAt,
    Fp8ConversionInfo, KbinCcStreams, KbinDmaHeader, KbinFp8ConvCfg, KbinMemRefSetHeader, ManifestError,
    ManifestWarning, MlaResourcesTail, MrType, QueueKind, SbCarveout, Var, Visitor, EVTACCEL_OFFSET,
    EVTACCEL_PARTITIONS, MAX_QUEUES_PER_SET,
};
use crate::error::Text;
use crate::json::Tokenizer;
use crate::{Error, Stage, WarningSink};

/// Whether [`DefFacts::check_carveouts`] applies the cayman rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TargetCheck {
    /// Apply the rules of this architecture (the KELF target's, §15.19).
    Device(Arch),
    /// No architecture known (`*` without a device): no architecture-specific rules.
    None,
}

/// The stages of libnrt's `def.json` demux (`kelf_load_from_neff`, seed §5, spec §7.2), in
/// its order: of two faults, the one of the earlier stage is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DemuxStage {
    /// The document itself (its root is no object): refused before any key.
    Document,
    /// `var`, each entry (`parse_one_variable`).
    Var,
    /// The gate after `var`: dense ids (`check_var_ids`), at least one output var.
    CheckVarIds,
    /// `dma_queue` (`parse_one_dma_ring`).
    DmaQueue,
    /// `replica_groups`.
    ReplicaGroups,
    /// `src_target_pairs`.
    SrcTargetPairs,
    /// `ext_isa_ucode_lib_def`.
    ExtIsa,
    /// `ucode_lib` (`parse_one_ucode_lib`).
    UcodeLib,
    /// `runtime_statebuffer_reservation` (`parse_sb_carveouts`).
    Reservation,
    /// `num_streams` (and real files' `cc_streams.num_streams`).
    NumStreams,
    /// `dma` (`parse_one_dma_block`).
    Dma,
    /// `fp8_conversion_config`.
    Fp8,
    /// The engines (`pe`, `act`, `pool`, `dve`, `sp`, `q7` and their `_instr`).
    Engines,
    /// A key the demux does not read (`name`, `version`): last.
    Unread,
}

impl DemuxStage {
    /// The stage of a fault at key path `path` (`var.x.size`: `Var`), by its first segment.
    pub fn of_path(path: &str) -> DemuxStage {
        // Bytes, not `str` patterns: their generic searches cost flash on a controller.
        let bytes = path.as_bytes();
        let end = bytes.iter().position(|&b| b == b'.' || b == b'[').unwrap_or(bytes.len());
        let top = path.get(..end).unwrap_or("");
        match top {
            "" => DemuxStage::Document,
            DefJson::KEY_VARS => DemuxStage::Var,
            DefJson::KEY_CHECK_VAR_IDS => DemuxStage::CheckVarIds,
            DefJson::KEY_DMA_QUEUES => DemuxStage::DmaQueue,
            DefJson::KEY_REPLICA_GROUPS => DemuxStage::ReplicaGroups,
            DefJson::KEY_SRC_TARGET_PAIRS => DemuxStage::SrcTargetPairs,
            DefJson::KEY_EXT_ISA_LIB => DemuxStage::ExtIsa,
            DefJson::KEY_UCODE_LIBS => DemuxStage::UcodeLib,
            DefJson::KEY_CARVEOUTS => DemuxStage::Reservation,
            DefJson::KEY_NUM_STREAMS | DefJson::KEY_CC_STREAMS => DemuxStage::NumStreams,
            DefJson::KEY_DMA => DemuxStage::Dma,
            DefJson::KEY_FP8_CONVERSION_CONFIG => DemuxStage::Fp8,
            _ if ENGINE_KEYS.iter().any(|e| e.as_str() == top) => DemuxStage::Engines,
            DefJson::KEY_PE_INSTR
            | DefJson::KEY_ACT_INSTR
            | DefJson::KEY_POOL_INSTR
            | DefJson::KEY_DVE_INSTR
            | DefJson::KEY_SP_INSTR
            | DefJson::KEY_Q7_INSTR => DemuxStage::Engines,
            _ => DemuxStage::Unread,
        }
    }
}

/// The fault libnrt meets first among those seen so far: its stage and the error.
#[derive(Debug, Default)]
struct FirstFault(Option<(DemuxStage, Error)>);

impl FirstFault {
    /// Keeps `error` if its stage comes before the kept one's (a later fault of the same stage
    /// comes after it in the file, and libnrt walks a stage in file order). Returns whether it
    /// was kept.
    fn offer(&mut self, error: Error) -> bool {
        self.offer_at(DemuxStage::of_path(error.key_path.as_str()), error)
    }

    /// [`FirstFault::offer`] for a fault whose stage is not its key path's.
    fn offer_at(&mut self, stage: DemuxStage, error: Error) -> bool {
        match &self.0 {
            Some((kept, _)) if *kept <= stage => false,
            _ => {
                self.0 = Some((stage, error));
                true
            }
        }
    }
}

/// The runtime's `al_hal_tpb_eng_type` for no engine (spec §7.5: "other ⇒ 5").
pub const ENGINE_INVALID: u32 = 5;

/// The event-accelerator carveout size the runtime requires on cayman.
const EVTACCEL_SIZE: u64 = 8;

impl Var {
    /// The `kbin_mr_type` value, `None` for types whose value is not published.
    pub fn mr_type_value(&self) -> Option<u32> {
        self.mr_type().map(MrType::value)
    }
}

impl DmaQueue {
    /// The ring type: the `type` map, with `data` + `indirect_memcpy` as `IndirectMemcpy`;
    /// `None` for types without a published value (`dynamic`).
    pub fn ring_type(&self) -> Option<DmaRingType> {
        match self.base_ring_type() {
            Some(DmaRingType::Data) if self.indirect_memcpy => Some(DmaRingType::IndirectMemcpy),
            other => other,
        }
    }

    /// The runtime's `kbin_dma_t` for this queue set, without its ring-instance pointers:
    /// ring type (`u32::MAX` for `dynamic` and other types without a published value), owner
    /// (`al_hal_tpb_eng_type`, 5 when absent or unknown, the runtime's invalid sentinel),
    /// queue count, semaphores, the dynamic-DMA scratch and the ring-instance count. The
    /// pseudo-serialization semaphores and the flags are the runtime's own (zero here).
    // A field appended to the layout in schema/layouts.toml starts at zero: the `..` tail
    // keeps this hand-written filler unchanged when the schema grows.
    #[allow(clippy::needless_update)]
    pub fn layout(&self) -> KbinDmaHeader {
        let mut semaphores = [0u32; 32];
        let own = self.semaphores();
        for (dst, &s) in semaphores.iter_mut().zip(own) {
            *dst = s;
        }
        let scratch = self.dynamic_dma.as_ref();
        KbinDmaHeader {
            ring_type: self.ring_type().map_or(u32::MAX, DmaRingType::value),
            owner: self.owner_engine().map_or(ENGINE_INVALID, EngineType::value),
            queue_set_cnt: self.num_queues,
            semaphore_cnt: u32::try_from(own.len()).unwrap_or(u32::MAX),
            semaphores,
            pseudo_serialization_semaphore_cnt: 0,
            pseudo_serialization_semaphores: [0; 32],
            dge_sb_scratch_addr: scratch.and_then(|d| d.sb_scratch_partition_offset).unwrap_or(0),
            dge_sb_scratch_size: scratch.and_then(|d| d.sb_scratch_partition_size).unwrap_or(0),
            flags: 0,
            ring_instance_count: self
                .queue_instances
                .as_ref()
                .map_or(0, |c| u32::try_from(c.count).unwrap_or(u32::MAX)),
            reserved: 0,
            ..KbinDmaHeader::default()
        }
    }

    /// `semaphore_set`, or `[semaphore]`, or nothing.
    pub fn semaphores(&self) -> &[u32] {
        match (&self.semaphore_set, &self.semaphore) {
            (Some(set), _) => set.as_slice(),
            (None, Some(one)) => core::slice::from_ref(one),
            (None, None) => &[],
        }
    }
}

impl Carveout {
    /// The runtime's `sb_carveout`.
    // A field appended to the layout in schema/layouts.toml starts at zero: the `..` tail
    // keeps this hand-written filler unchanged when the schema grows.
    #[allow(clippy::needless_update)]
    pub fn layout(&self) -> SbCarveout {
        SbCarveout {
            carveout_type: self.kind().map_or(CarveoutType::Invalid.value(), CarveoutType::value),
            offset: self.offset,
            size: self.size,
            start_partition: self.start_partition,
            num_partitions: self.num_partitions,
            ..SbCarveout::default()
        }
    }

    /// The cayman rule this event-accelerator carveout breaks, if any.
    pub fn cayman_violation(&self) -> Option<ManifestError> {
        if self.kind() != Some(CarveoutType::Evtaccel) {
            return None;
        }
        if self.start_partition != 0 {
            Some(ManifestError::CarveoutStartPartition(self.start_partition))
        } else if self.num_partitions != EVTACCEL_PARTITIONS {
            Some(ManifestError::CarveoutPartitionCount(self.num_partitions))
        } else if self.offset != EVTACCEL_OFFSET {
            Some(ManifestError::CarveoutOffset(self.offset))
        } else if self.size != EVTACCEL_SIZE {
            Some(ManifestError::CarveoutSize(self.size))
        } else {
            None
        }
    }
}

/// The engines in the runtime's order.
pub const ENGINES: [EngineType; 5] =
    [EngineType::Pe, EngineType::Act, EngineType::Pool, EngineType::Dve, EngineType::Sp];

/// An engine slot of a definition: the five TPB engines (§7.5, always built, empty when
/// absent) and the optional Vision-Q7 (GPSIMD) engine of the seed's engine list
/// (`pe/act/dve/sp/pool[,q7]`), which is no `al_hal_tpb_eng_type` and no queue owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EngineKey {
    /// A TPB engine.
    Tpb(EngineType),
    /// The Vision-Q7 engine (`q7`, `q7_instr`).
    Q7,
}

/// Every engine slot, TPB engines first in the runtime's order.
pub const ENGINE_KEYS: [EngineKey; 6] = [
    EngineKey::Tpb(EngineType::Pe),
    EngineKey::Tpb(EngineType::Act),
    EngineKey::Tpb(EngineType::Pool),
    EngineKey::Tpb(EngineType::Dve),
    EngineKey::Tpb(EngineType::Sp),
    EngineKey::Q7,
];

impl EngineKey {
    /// The `def.json` key naming its engine JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            EngineKey::Tpb(e) => e.as_str(),
            EngineKey::Q7 => DefJson::KEY_Q7,
        }
    }

    /// Its position in [`ENGINE_KEYS`].
    pub const fn slot(self) -> usize {
        match self {
            EngineKey::Tpb(EngineType::Pe) => 0,
            EngineKey::Tpb(EngineType::Act) => 1,
            EngineKey::Tpb(EngineType::Pool) => 2,
            EngineKey::Tpb(EngineType::Dve) => 3,
            EngineKey::Tpb(EngineType::Sp) => 4,
            EngineKey::Q7 => 5,
        }
    }
}

impl DefJson {
    /// The engine JSON member of an engine slot (relative to the subgraph directory).
    pub fn engine_member(&self, key: EngineKey) -> Option<&str> {
        match key {
            EngineKey::Tpb(e) => self.engine_json(e),
            EngineKey::Q7 => self.q7.as_deref(),
        }
    }

    /// The instruction stream `def.json` names for an engine slot (`<eng>_instr`).
    pub fn engine_stream(&self, key: EngineKey) -> Option<&str> {
        match key {
            EngineKey::Tpb(e) => self.engine_instr(e),
            EngineKey::Q7 => self.q7_instr.as_deref(),
        }
    }

    /// The instruction stream named by `pe_instr`, `act_instr`, ... (the engine JSON's
    /// `instr` takes precedence, see [`super::engine::resolve_instr`]).
    pub fn engine_instr(&self, engine: EngineType) -> Option<&str> {
        let s = match engine {
            EngineType::Pe => &self.pe_instr,
            EngineType::Act => &self.act_instr,
            EngineType::Pool => &self.pool_instr,
            EngineType::Dve => &self.dve_instr,
            EngineType::Sp => &self.sp_instr,
        };
        s.as_deref()
    }

    /// The engine JSON member named by `pe`, `act`, ... (relative to the subgraph directory).
    pub fn engine_json(&self, engine: EngineType) -> Option<&str> {
        let s = match engine {
            EngineType::Pe => &self.pe,
            EngineType::Act => &self.act,
            EngineType::Pool => &self.pool,
            EngineType::Dve => &self.dve,
            EngineType::Sp => &self.sp,
        };
        s.as_deref()
    }

    /// The collective stream count: `num_streams` (the runtime's key) if present, else
    /// `cc_streams.num_streams` (real files).
    pub fn num_streams(&self) -> Option<u32> {
        self.num_streams.or_else(|| self.cc_streams.as_ref().and_then(|c| c.num_streams))
    }

    /// The runtime's `kbin_cc_streams_t`: the stream count, 1 (the runtime's initial value)
    /// when the document has none.
    // A field appended to the layout in schema/layouts.toml starts at zero: the `..` tail
    // keeps this hand-written filler unchanged when the schema grows.
    #[allow(clippy::needless_update)]
    pub fn cc_streams_layout(&self) -> KbinCcStreams {
        KbinCcStreams { num_streams: self.num_streams().unwrap_or(1), reserved: 0, ..KbinCcStreams::default() }
    }

    /// The runtime's `fp8_conversion_info` with the runtime's debug overrides applied
    /// ([`Fp8Overrides`], `LoadOptions::fp8`).
    pub fn fp8_info_with(&self, overrides: &Fp8Overrides) -> Fp8ConversionInfo {
        overrides.apply(self.fp8_info())
    }

    /// The runtime's `fp8_conversion_info` (not initialised when the key is absent).
    // A field appended to the layout in schema/layouts.toml starts at zero: the `..` tail
    // keeps this hand-written filler unchanged when the schema grows.
    #[allow(clippy::needless_update)]
    pub fn fp8_info(&self) -> Fp8ConversionInfo {
        match &self.fp8_conversion_config {
            Some(c) => Fp8ConversionInfo {
                initialized: true,
                cfg: KbinFp8ConvCfg {
                    fp8_range_extension: c.fp8_range_extension,
                    emax_fp8_e4m3: c.emax_fp8_e4m3,
                    emax_fp8_e5m2: c.emax_fp8_e5m2,
                    ocp_sat: c.ocp_sat,
                    fp8_sis: c.fp8_sis,
                    fp8_sns: c.fp8_sns,
                    ..KbinFp8ConvCfg::default()
                },
                ..Fp8ConversionInfo::default()
            },
            None => Fp8ConversionInfo::default(),
        }
    }

    /// `check_var_ids` is present with a value other than `false` (§15.17).
    pub fn checks_var_ids(&self) -> bool {
        self.check_var_ids.is_some_and(|p| !p.is_false)
    }
}

/// The runtime's debug overrides of `fp8_conversion_config` (seed §7, spec §7.8): libnrt reads
/// each from an environment variable ([`Fp8Overrides::VARIABLES`]) and puts it in place of the
/// document's value. A field set here replaces the value whether or not the document has the
/// key; `initialized` stays what the document says (libnrt's behaviour without the key is not
/// documented).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Fp8Overrides {
    /// `NEURON_RT_DBG_FP8_RANGE_EXT`: `fp8_range_extension`.
    pub fp8_range_extension: Option<bool>,
    /// `NEURON_RT_DBG_FP8_EMAX_E4M3`: `emax_fp8_e4m3`.
    pub emax_fp8_e4m3: Option<u32>,
    /// `NEURON_RT_DBG_FP8_EMAX_E5M2`: `emax_fp8_e5m2`.
    pub emax_fp8_e5m2: Option<u32>,
    /// `NEURON_RT_DBG_OCP_FP8_SAT`: `ocp_sat`.
    pub ocp_sat: Option<bool>,
    /// `NEURON_RT_DBG_FP8_SIS`: `fp8_sis`.
    pub fp8_sis: Option<bool>,
    /// `NEURON_RT_DBG_FP8_SNS`: `fp8_sns`.
    pub fp8_sns: Option<bool>,
}

/// A value an [`Fp8Overrides`] variable cannot take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fp8OverrideError {
    /// The variable.
    pub variable: &'static str,
    /// What it takes.
    pub expected: &'static str,
}

impl core::fmt::Display for Fp8OverrideError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} takes {}", self.variable, self.expected)
    }
}

impl Fp8Overrides {
    /// The runtime's environment variables, in the order of the config's fields.
    pub const VARIABLES: [&'static str; 6] = [
        "NEURON_RT_DBG_FP8_RANGE_EXT",
        "NEURON_RT_DBG_FP8_EMAX_E4M3",
        "NEURON_RT_DBG_FP8_EMAX_E5M2",
        "NEURON_RT_DBG_OCP_FP8_SAT",
        "NEURON_RT_DBG_FP8_SIS",
        "NEURON_RT_DBG_FP8_SNS",
    ];

    /// Sets the field of variable `name` from its text `value` (a flag: `0`/`1`, `false`/`true`;
    /// an exponent: a decimal `u32`). `Ok(false)`: `name` is none of [`Fp8Overrides::VARIABLES`].
    pub fn set(&mut self, name: &str, value: &str) -> Result<bool, Fp8OverrideError> {
        let [range, e4m3, e5m2, sat, sis, sns] = Self::VARIABLES;
        let flag = |variable: &'static str| match value.trim() {
            "1" | "true" => Ok(Some(true)),
            "0" | "false" => Ok(Some(false)),
            _ => Err(Fp8OverrideError { variable, expected: "0, 1, false or true" }),
        };
        let number = |variable: &'static str| {
            value
                .trim()
                .parse::<u32>()
                .map(Some)
                .map_err(|_| Fp8OverrideError { variable, expected: "an unsigned integer" })
        };
        match name {
            n if n == range => self.fp8_range_extension = flag(range)?,
            n if n == e4m3 => self.emax_fp8_e4m3 = number(e4m3)?,
            n if n == e5m2 => self.emax_fp8_e5m2 = number(e5m2)?,
            n if n == sat => self.ocp_sat = flag(sat)?,
            n if n == sis => self.fp8_sis = flag(sis)?,
            n if n == sns => self.fp8_sns = flag(sns)?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// `info` with every field set here in place of its own.
    pub fn apply(&self, mut info: Fp8ConversionInfo) -> Fp8ConversionInfo {
        let cfg = &mut info.cfg;
        cfg.fp8_range_extension = self.fp8_range_extension.unwrap_or(cfg.fp8_range_extension);
        cfg.emax_fp8_e4m3 = self.emax_fp8_e4m3.unwrap_or(cfg.emax_fp8_e4m3);
        cfg.emax_fp8_e5m2 = self.emax_fp8_e5m2.unwrap_or(cfg.emax_fp8_e5m2);
        cfg.ocp_sat = self.ocp_sat.unwrap_or(cfg.ocp_sat);
        cfg.fp8_sis = self.fp8_sis.unwrap_or(cfg.fp8_sis);
        cfg.fp8_sns = self.fp8_sns.unwrap_or(cfg.fp8_sns);
        info
    }
}

/// What the checks of one `def.json` learned from its streamed entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DefFacts {
    /// Vars read.
    pub vars: u64,
    /// `output` vars read.
    pub outputs: u64,
    /// `input` vars read.
    pub inputs: u64,
    /// The largest `var_id`.
    pub max_var_id: Option<u32>,
    /// `file` vars with a `file_name`.
    pub file_vars: u64,
    /// DMA queue sets read.
    pub queues: u64,
    /// Bytes of the shared scratchpad: the largest `backing_variable_off + size` of the
    /// `virtual` vars (0 without any); `None` on overflow.
    pub shared_scratchpad: Option<u64>,
    /// `runtime_statebuffer_reservation` is present.
    pub carveouts_present: bool,
    /// The first carveout that breaks a cayman rule: its index and the rule.
    pub cayman_violation: Option<(u64, ManifestError)>,
    /// Carveouts read.
    pub carveouts: u64,
}

/// Where [`MlaResourcesTail`] starts in the runtime's `mla_resources`, and that struct's size
/// (spec §12): the tail ends the struct.
pub const MLA_RESOURCES_TAIL_AT: usize = 408;
/// The size of the runtime's `mla_resources` (spec §12).
pub const MLA_RESOURCES_SIZE: usize = 440;
const _: () = assert!(MLA_RESOURCES_TAIL_AT + core::mem::size_of::<MlaResourcesTail>() == MLA_RESOURCES_SIZE);

impl DefFacts {
    /// The pointer-free tail of the runtime's `mla_resources` for `doc`, with `fp8` (the
    /// config as observed, overrides applied); `None` when a var count does not fit its
    /// field.
    // A field appended to the layout in schema/layouts.toml starts at zero: the `..` tail
    // keeps this hand-written filler unchanged when the schema grows.
    #[allow(clippy::needless_update)]
    pub fn mla_tail(&self, doc: &DefJson, fp8: Fp8ConversionInfo) -> Option<MlaResourcesTail> {
        Some(MlaResourcesTail {
            ccstmi: doc.num_streams().unwrap_or(0),
            fp8_conv_cfg: fp8,
            num_inputs: u32::try_from(self.inputs).ok()?,
            num_outputs: u32::try_from(self.outputs).ok()?,
            ..MlaResourcesTail::default()
        })
    }

    /// The runtime's `kbin_mem_ref_set_t` header: the shared scratchpad (the largest
    /// `backing_variable_off + size` of the `virtual` vars) and the var count. The private
    /// scratchpad is the runtime's own planning (no source says how it is sized): zero here.
    /// `None` when a count or the scratchpad does not fit the runtime's field.
    // A field appended to the layout in schema/layouts.toml starts at zero: the `..` tail
    // keeps this hand-written filler unchanged when the schema grows.
    #[allow(clippy::needless_update)]
    pub fn mem_ref_set(&self) -> Option<KbinMemRefSetHeader> {
        Some(KbinMemRefSetHeader {
            local_scratchpad_size: 0,
            shared_scratchpad_size: self.shared_scratchpad?,
            nmem: u32::try_from(self.vars).ok()?,
            reserved: 0,
            ..KbinMemRefSetHeader::default()
        })
    }

    /// The runtime's state-buffer carveout rules for `target`: on cayman the key must be
    /// present (unless `allow_legacy`, `NEURON_RT_ALLOW_LEGACY_NEFF=1`) and every event-accel
    /// carveout must be 8 bytes at offset 0x37ff8 over partitions 0..128. Other architectures
    /// have no rule. An empty list is accepted. The error comes with its key path.
    pub fn check_carveouts(
        &self,
        target: TargetCheck,
        allow_legacy: bool,
    ) -> Result<(), (heapless::String<64>, ManifestError)> {
        if target != TargetCheck::Device(Arch::Cayman) {
            return Ok(());
        }
        let mut path = heapless::String::new();
        let _ = path.push_str(DefJson::KEY_CARVEOUTS);
        if !self.carveouts_present {
            return if allow_legacy { Ok(()) } else { Err((path, ManifestError::MissingCarveout)) };
        }
        match self.cayman_violation {
            Some((i, e)) => {
                let _ = path.push('[').is_ok() && crate::error::push_decimal(&mut path, i) && path.push(']').is_ok();
                Err((path, e))
            }
            None => Ok(()),
        }
    }
}

/// Checks each streamed entry, then hands it on; keeps a fault of the entry's rules instead of
/// stopping (see the module docs: libnrt's order).
struct Checks<'v> {
    facts: DefFacts,
    first: FirstFault,
    inner: &'v mut dyn Visitor,
    sink: &'v mut dyn WarningSink,
}

impl Checks<'_> {
    /// Warns of a value the spec's maps do not have, naming it.
    #[cold]
    #[inline(never)]
    fn unknown(&mut self, at: &EntryAt<'_>, key: &'static str, value: &str) {
        at.warn_unknown(self.sink, key, value);
    }

    fn check(&mut self, entry: &Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        match *entry {
            Entry::Var(v) => {
                // `dge-table` is known but has no published `kbin_mr_type` (spec §17.6).
                if v.mr_type().is_none() && v.var_type.as_str() != "dge-table" {
                    self.unknown(at, Var::KEY_VAR_TYPE, &v.var_type);
                }
                if let Some(d) = v.dtype.as_deref().filter(|d| super::KbinDtype::from_json(d).is_none()) {
                    self.unknown(at, Var::KEY_DTYPE, d);
                }
                if let Some(p) = v.fabric_path.as_deref().filter(|p| !FABRIC_PATHS.contains(p)) {
                    self.unknown(at, Var::KEY_FABRIC_PATH, p);
                }
                if let Some(b) = v.backing_buf.as_deref().filter(|b| !BACKING_BUFS.contains(b)) {
                    self.unknown(at, Var::KEY_BACKING_BUF, b);
                }
                let f = &mut self.facts;
                if let Some(a) = v.alignment {
                    if a != 0 && !a.is_power_of_two() {
                        return Err(at.key_error(Var::KEY_ALIGNMENT, ManifestError::AlignmentNotPowerOfTwo(a)));
                    }
                }
                check_var_size(v, at)?;
                f.vars = f.vars.saturating_add(1);
                f.max_var_id = Some(f.max_var_id.map_or(v.var_id, |m| m.max(v.var_id)));
                match v.mr_type() {
                    Some(MrType::Output) => f.outputs = f.outputs.saturating_add(1),
                    Some(MrType::Input) => f.inputs = f.inputs.saturating_add(1),
                    Some(MrType::Buffer) if v.file_name.is_some() => f.file_vars = f.file_vars.saturating_add(1),
                    Some(MrType::VirtualTmpBuf) => {
                        let end = v.backing_variable_off.unwrap_or(0).checked_add(v.size.unwrap_or(0));
                        f.shared_scratchpad = match (f.shared_scratchpad, end) {
                            (Some(m), Some(e)) => Some(m.max(e)),
                            _ => None,
                        };
                    }
                    _ => {}
                }
            }
            Entry::DmaQueue(q) => {
                check_queue(q, at)?;
                // `dynamic` is known but has no published ring type (spec §17.5).
                if q.base_ring_type().is_none() && q.queue_type.as_str() != "dynamic" {
                    self.unknown(at, DmaQueue::KEY_QUEUE_TYPE, &q.queue_type);
                }
                if let Some(p) = q.fabric_path.as_deref().filter(|p| !FABRIC_PATHS.contains(p)) {
                    self.unknown(at, DmaQueue::KEY_FABRIC_PATH, p);
                }
                let f = &mut self.facts;
                f.queues = f.queues.saturating_add(1);
            }
            Entry::UcodeLib(lib) => super::engine::check_ucode_lib(lib, at)?,
            Entry::DmaDesc(d) => super::engine::check_desc(d, at)?,
            Entry::CceSource(s) => super::engine::check_cce_source(s, at)?,
            Entry::Carveout(c) => {
                let f = &mut self.facts;
                if f.cayman_violation.is_none() {
                    f.cayman_violation = c.cayman_violation().map(|e| (f.carveouts, e));
                }
                f.carveouts = f.carveouts.saturating_add(1);
            }
            _ => {}
        }
        Ok(())
    }
}

/// Tells the caller's visitor the read failed at `error`'s key path (whole unless cut).
fn note_failed(inner: &mut dyn Visitor, error: &Error) {
    let path = error.key_path.as_str();
    inner.failed(error.member.as_str(), (!path.ends_with('…')).then_some(path), None);
}

/// The `fabric_path` values the spec documents (§7.3, §7.4); another is accepted with a warning.
const FABRIC_PATHS: [&str; 2] = ["main", "alt"];
/// The `backing_buf` values of a `virtual` var (§7.3); another is accepted with a warning.
const BACKING_BUFS: [&str; 2] = ["main", "sharded"];

/// A var's `size` (spec §7.3): required for the types that occupy device memory, and 8 bytes
/// for a pointer.
fn check_var_size(v: &Var, at: &EntryAt<'_>) -> Result<(), DocFault> {
    let needs_size = matches!(
        v.mr_type(),
        Some(MrType::Input | MrType::Output | MrType::Buffer | MrType::TmpBuf | MrType::VirtualTmpBuf | MrType::Ptr)
    );
    match v.size {
        None if needs_size => {
            let e = ManifestError::VarWithoutSize { var: Text::new(&v.name), var_type: Text::new(&v.var_type) };
            Err(at.key_error(Var::KEY_SIZE, e))
        }
        Some(size) if v.mr_type() == Some(MrType::Ptr) && size != super::POINTER_SIZE => {
            Err(at.key_error(Var::KEY_SIZE, ManifestError::PointerSize { var: Text::new(&v.name), size }))
        }
        _ => Ok(()),
    }
}

/// The runtime's rules for one DMA queue set (spec §7.4).
fn check_queue(q: &DmaQueue, at: &EntryAt<'_>) -> Result<(), DocFault> {
    let queue = Text::new(&q.name);
    if let Some(owner) = &q.owner {
        if EngineType::from_json(owner).is_none() {
            let e = ManifestError::InvalidOwner { owner: Text::new(owner), queue };
            return Err(at.key_error(DmaQueue::KEY_OWNER, e));
        }
    }
    let kind = match q.base_ring_type() {
        Some(DmaRingType::In) => Some(QueueKind::Input),
        Some(DmaRingType::Out) => Some(QueueKind::Output),
        Some(DmaRingType::EmbeddingUpdate) => Some(QueueKind::EmbeddingUpdate),
        _ => None,
    };
    if let (Some(kind), Some(_)) = (kind, &q.queue_instances) {
        let e = ManifestError::QueueInstancesNotSupported { kind, queue };
        return Err(at.key_error(DmaQueue::KEY_QUEUE_INSTANCES, e));
    }
    // `num_queues` is accepted on every kind: real NEFFs write 16 on `in` queues (§15.21).
    if q.num_queues > MAX_QUEUES_PER_SET {
        let e = ManifestError::TooManyQueues { count: q.num_queues, queue };
        return Err(at.key_error(DmaQueue::KEY_NUM_QUEUES, e));
    }
    if kind == Some(QueueKind::EmbeddingUpdate) && q.embedding_update_sync_semaphore.is_none() {
        let e = ManifestError::MissingSyncSemaphore(queue);
        return Err(at.key_error(DmaQueue::KEY_EMBEDDING_UPDATE_SYNC_SEMAPHORE, e));
    }
    if let Some(d) = &q.dynamic_dma {
        if d.sb_scratch_partition_offset.is_none() || d.sb_scratch_partition_size.is_none() {
            return Err(at.key_error(DmaQueue::KEY_DYNAMIC_DMA, ManifestError::DynamicDmaScratch(queue)));
        }
    }
    Ok(())
}

impl Visitor for Checks<'_> {
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        if let Err(fault) = self.check(&entry, at) {
            // The entry breaks a rule of libnrt's: kept, and the read goes on to the end, where
            // the fault libnrt meets first is reported. The document is refused: nothing more
            // is handed on.
            let key = fault.key;
            let error = at.ctx.attach(fault);
            if self.first.offer(error) {
                // Noted as the generated reader notes a fault it stops at: the path as it is.
                self.inner.failed(at.member(), at.ctx.path.whole(), key);
            }
            return Ok(());
        }
        super::engine::warn_unknown_dtypes(&entry, at, self.sink);
        if self.first.0.is_some() {
            return Ok(());
        }
        self.inner.entry(entry, at)
    }

    fn failed(&mut self, member: &str, path: Option<&str>, key: Option<&'static str>) {
        self.inner.failed(member, path, key);
    }
}

impl Document for DefJson {
    type Facts = DefFacts;

    fn parse_into<R: BufRead>(
        &mut self,
        tok: &mut Tokenizer<'_>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
        visitor: &mut dyn Visitor,
    ) -> Result<DefFacts, Error> {
        let mut checks = Checks {
            facts: DefFacts { shared_scratchpad: Some(0), ..DefFacts::default() },
            first: FirstFault::default(),
            inner: visitor,
            sink: &mut *sink,
        };
        let read = self.read_document(tok, src, member, &mut checks);
        let Checks { mut facts, first: mut kept, inner, .. } = checks;
        if let Err(stop) = read {
            // A fault that could not wait: the earlier-stage one of it and the kept one. Only a
            // manifest rule competes; a syntax, source or loader error is reported as it is.
            return Err(match (stop.kind, kept.0) {
                (crate::ErrorKind::Manifest(_), Some((stage, error)))
                    if stage < DemuxStage::of_path(stop.key_path.as_str()) =>
                {
                    note_failed(inner, &error);
                    error
                }
                _ => stop,
            });
        }
        facts.carveouts_present = self.carveouts.is_some();
        let end = tok.offset();
        let fail = |path: &str, e: ManifestError| semantic(Stage::DefJson, member, end, path, e);
        // The end-of-document checks, in their stages' order; the first that fails competes
        // with the kept fault.
        let mut at_end = None;
        if self.checks_var_ids() {
            if let Some(max) = facts.max_var_id {
                if u64::from(max) + 1 != facts.vars {
                    let e = ManifestError::UnexpectedVarIds { max, size: facts.vars };
                    at_end = Some((DemuxStage::CheckVarIds, fail(Self::KEY_VARS, e)));
                }
            }
        }
        if at_end.is_none() && facts.outputs == 0 {
            at_end = Some((DemuxStage::CheckVarIds, fail(Self::KEY_VARS, ManifestError::NoOutputs)));
        }
        // §7.1: the Extended-ISA library replaces the default one, of at most 18 ops.
        if let Some(ops) = self.ext_isa_lib.as_ref().and_then(|lib| lib.functions).map(|n| n.0) {
            if at_end.is_none() && ops > super::MAX_EXT_ISA_OPS {
                let mut path: heapless::String<48> = heapless::String::new();
                let _ =
                    crate::error::push_all(&mut path, &[Self::KEY_EXT_ISA_LIB, ".", super::ExtIsaLib::KEY_FUNCTIONS]);
                at_end = Some((DemuxStage::ExtIsa, fail(&path, ManifestError::TooManyExtIsaOps(ops))));
            }
        }
        if let Some((stage, error)) = at_end {
            if kept.offer_at(stage, error) {
                if let Some((_, e)) = &kept.0 {
                    note_failed(inner, e);
                }
            }
        }
        if let Some((_, error)) = kept.0 {
            return Err(error);
        }
        for engine in ENGINES {
            if self.engine_json(engine).is_none() {
                warn(
                    sink,
                    Stage::DefJson,
                    member,
                    end,
                    engine.as_str(),
                    ManifestWarning::EngineMissing { engine: engine.value(), neff: Text::EMPTY },
                );
            }
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_takes_the_stage_of_its_top_level_key() {
        let cases = [
            ("", DemuxStage::Document),
            ("var.x.y.size", DemuxStage::Var),
            ("check_var_ids", DemuxStage::CheckVarIds),
            ("dma_queue.q.owner", DemuxStage::DmaQueue),
            ("replica_groups[0]", DemuxStage::ReplicaGroups),
            ("src_target_pairs", DemuxStage::SrcTargetPairs),
            ("ext_isa_ucode_lib_def.functions", DemuxStage::ExtIsa),
            ("ucode_lib[2].total_cpus", DemuxStage::UcodeLib),
            ("runtime_statebuffer_reservation[0].type", DemuxStage::Reservation),
            ("num_streams", DemuxStage::NumStreams),
            ("cc_streams.num_streams", DemuxStage::NumStreams),
            ("dma[0].desc[1].from", DemuxStage::Dma),
            ("fp8_conversion_config.ocp_sat", DemuxStage::Fp8),
            ("pe", DemuxStage::Engines),
            ("q7_instr", DemuxStage::Engines),
            ("version", DemuxStage::Unread),
        ];
        for (path, stage) in cases {
            assert_eq!(DemuxStage::of_path(path), stage, "{path}");
        }
        // The order is libnrt's demux order.
        let order: [DemuxStage; 12] = [
            DemuxStage::Var,
            DemuxStage::CheckVarIds,
            DemuxStage::DmaQueue,
            DemuxStage::ReplicaGroups,
            DemuxStage::SrcTargetPairs,
            DemuxStage::ExtIsa,
            DemuxStage::UcodeLib,
            DemuxStage::Reservation,
            DemuxStage::NumStreams,
            DemuxStage::Dma,
            DemuxStage::Fp8,
            DemuxStage::Engines,
        ];
        assert!(order.windows(2).all(|w| w.first() < w.last()));
    }

    #[test]
    fn fp8_overrides_replace_the_document_s_values() {
        let mut o = Fp8Overrides::default();
        assert_eq!(o.set("NEURON_RT_DBG_FP8_EMAX_E4M3", "7"), Ok(true));
        assert_eq!(o.set("NEURON_RT_DBG_OCP_FP8_SAT", "0"), Ok(true));
        assert_eq!(o.set("NEURON_RT_DBG_FP8_SNS", "true"), Ok(true));
        assert_eq!(o.set("NEURON_RT_ALLOW_LEGACY_NEFF", "1"), Ok(false));
        let bad = o.set("NEURON_RT_DBG_FP8_SIS", "yes");
        assert_eq!(bad.map_err(|e| e.variable), Err("NEURON_RT_DBG_FP8_SIS"));
        assert!(o.set("NEURON_RT_DBG_FP8_EMAX_E5M2", "-1").is_err());
        let doc = Fp8ConversionInfo {
            initialized: true,
            cfg: KbinFp8ConvCfg {
                fp8_range_extension: true,
                emax_fp8_e4m3: 8,
                emax_fp8_e5m2: 15,
                ocp_sat: true,
                fp8_sis: false,
                fp8_sns: false,
            },
        };
        let got = o.apply(doc);
        let want = KbinFp8ConvCfg { emax_fp8_e4m3: 7, ocp_sat: false, fp8_sns: true, ..doc.cfg };
        assert_eq!((got.initialized, got.cfg), (true, want));
        assert_eq!(Fp8Overrides::default().apply(doc), doc, "no override changes nothing");
    }

    #[test]
    fn the_first_fault_of_the_earliest_stage_is_kept() {
        let at = |path: &str| Error::in_member(Stage::DefJson, "d", 0, crate::ErrorKind::Truncated).with_key_path(path);
        let mut first = FirstFault::default();
        assert!(first.offer(at("dma_queue.q")));
        assert!(!first.offer(at("dma_queue.r")), "same stage, later in the file");
        assert!(!first.offer(at("pe")), "a later stage");
        assert!(first.offer(at("var.x")), "an earlier stage");
        assert_eq!(first.0.map(|(s, e)| (s, e.key_path)), Some((DemuxStage::Var, crate::error::Text::new("var.x"))));
    }
}
