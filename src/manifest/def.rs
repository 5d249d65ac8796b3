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
//! Checks made after reading, as the runtime makes them: every var has a `type` and a `var_id`
//! (generated), an `alignment` is a power of two, the var ids are dense
//! (`Unexpected var_ids set! max=%u, size=%lu`, always checked, §15.17) and unique, at least one
//! `output` var exists; every queue has a `type` (generated), a known `owner`, no
//! `queue_instances` on in/out/embedding-update queues, at most 32 semaphores (generated);
//! carveout types are `evtaccel` (generated). After the checks `vars` is sorted by `var_id`.
//! The cayman-only carveout values are [`DefJson::check_carveouts`], which the loader calls with
//! the device architecture.

use embedded_io::BufRead;

use super::Document;

use super::{
    semantic, warn, Arch, Carveout, CarveoutType, DefJson, DmaQueue, DmaRingType, EngineType, Fp8ConversionInfo,
    KbinFp8ConvCfg, ManifestError, ManifestWarning, MrType, QueueKind, SbCarveout, Var, EVTACCEL_OFFSET,
    EVTACCEL_PARTITIONS,
};
use crate::error::Text;
use crate::json::Tokenizer;
use crate::{Error, Stage, WarningSink};

/// Whether [`DefJson::check_carveouts`] applies the cayman rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TargetCheck {
    /// Apply the rules of this device architecture.
    Device(Arch),
    /// No device known: no architecture-specific rules.
    None,
}

/// The event-accelerator carveout size the runtime requires on cayman.
const EVTACCEL_SIZE: u64 = 8;

impl<
        const VAR_NAME: usize,
        const FILE_NAME: usize,
        const VAR_LIST: usize,
        const VAR_DIMS: usize,
        const SHORT_TEXT: usize,
    > Var<VAR_NAME, FILE_NAME, VAR_LIST, VAR_DIMS, SHORT_TEXT>
{
    /// The `kbin_mr_type` value, `None` for types whose value is not published.
    pub fn mr_type_value(&self) -> Option<u32> {
        self.mr_type().map(MrType::value)
    }
}

impl<const QUEUE_NAME: usize, const SEMAPHORES: usize, const QUEUE_INSTANCES: usize, const SHORT_TEXT: usize>
    DmaQueue<QUEUE_NAME, SEMAPHORES, QUEUE_INSTANCES, SHORT_TEXT>
{
    /// The ring type: the `type` map, with `data` + `indirect_memcpy` as `IndirectMemcpy`;
    /// `None` for types without a published value (`dynamic`).
    pub fn ring_type(&self) -> Option<DmaRingType> {
        match self.base_ring_type() {
            Some(DmaRingType::Data) if self.indirect_memcpy => Some(DmaRingType::IndirectMemcpy),
            other => other,
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

impl<const SHORT_TEXT: usize> Carveout<SHORT_TEXT> {
    /// The runtime's `sb_carveout`.
    pub fn layout(&self) -> SbCarveout {
        SbCarveout {
            carveout_type: self.kind().map_or(CarveoutType::Invalid.value(), CarveoutType::value),
            offset: self.offset,
            size: self.size,
            start_partition: self.start_partition,
            num_partitions: self.num_partitions,
        }
    }
}

/// The engines in the runtime's order.
pub const ENGINES: [EngineType; 5] =
    [EngineType::Pe, EngineType::Act, EngineType::Pool, EngineType::Dve, EngineType::Sp];

impl<
        const VARS: usize,
        const VAR_NAME: usize,
        const FILE_NAME: usize,
        const VAR_LIST: usize,
        const VAR_DIMS: usize,
        const QUEUES: usize,
        const QUEUE_NAME: usize,
        const SEMAPHORES: usize,
        const QUEUE_INSTANCES: usize,
        const CARVEOUTS: usize,
        const UCODE_LIBS: usize,
        const SHORT_TEXT: usize,
        const DESC_DIMS: usize,
    >
    DefJson<
        VARS,
        VAR_NAME,
        FILE_NAME,
        VAR_LIST,
        VAR_DIMS,
        QUEUES,
        QUEUE_NAME,
        SEMAPHORES,
        QUEUE_INSTANCES,
        CARVEOUTS,
        UCODE_LIBS,
        SHORT_TEXT,
        DESC_DIMS,
    >
{
    /// The var with `var_id` `id` (vars are sorted and dense after parse).
    pub fn var_by_id(&self, id: u32) -> Option<&Var<VAR_NAME, FILE_NAME, VAR_LIST, VAR_DIMS, SHORT_TEXT>> {
        self.vars.get(usize::try_from(id).ok()?).filter(|v| v.var_id == id)
    }

    /// The var named `name`.
    pub fn var(&self, name: &str) -> Option<&Var<VAR_NAME, FILE_NAME, VAR_LIST, VAR_DIMS, SHORT_TEXT>> {
        self.vars.iter().find(|v| v.name == name)
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

    /// The collective stream count: `num_streams` (the runtime's key) if present, else
    /// `cc_streams.num_streams` (real files).
    pub fn num_streams(&self) -> Option<u32> {
        self.num_streams.or_else(|| self.cc_streams.as_ref().and_then(|c| c.num_streams))
    }

    /// The runtime's `fp8_conversion_info` (not initialised when the key is absent).
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
                },
            },
            None => Fp8ConversionInfo::default(),
        }
    }

    /// Bytes of the shared scratchpad: the largest `backing_variable_off + size` of the
    /// `virtual` vars (0 without any); `None` on overflow.
    pub fn shared_scratchpad_size(&self) -> Option<u64> {
        self.vars.iter().filter(|v| v.mr_type() == Some(MrType::VirtualTmpBuf)).try_fold(0u64, |acc, v| {
            Some(acc.max(v.backing_variable_off.unwrap_or(0).checked_add(v.size.unwrap_or(0))?))
        })
    }

    /// The runtime's state-buffer carveout rules for `device`: on cayman the key must be
    /// present (unless `allow_legacy`, `NEURON_RT_ALLOW_LEGACY_NEFF=1`) and every event-accel
    /// carveout must be 8 bytes at offset 0x37ff8 over partitions 0..128. Other architectures
    /// have no rule. An empty list is accepted.
    pub fn check_carveouts(&self, device: TargetCheck, allow_legacy: bool) -> Result<(), ManifestError> {
        if device != TargetCheck::Device(Arch::Cayman) {
            return Ok(());
        }
        let Some(list) = &self.carveouts else {
            return if allow_legacy { Ok(()) } else { Err(ManifestError::MissingCarveout) };
        };
        for c in list.iter().filter(|c| c.kind() == Some(CarveoutType::Evtaccel)) {
            if c.start_partition != 0 {
                return Err(ManifestError::CarveoutStartPartition(c.start_partition));
            }
            if c.num_partitions != EVTACCEL_PARTITIONS {
                return Err(ManifestError::CarveoutPartitionCount(c.num_partitions));
            }
            if c.offset != EVTACCEL_OFFSET {
                return Err(ManifestError::CarveoutOffset(c.offset));
            }
            if c.size != EVTACCEL_SIZE {
                return Err(ManifestError::CarveoutSize(c.size));
            }
        }
        Ok(())
    }
}

impl<
        const VARS: usize,
        const VAR_NAME: usize,
        const FILE_NAME: usize,
        const VAR_LIST: usize,
        const VAR_DIMS: usize,
        const QUEUES: usize,
        const QUEUE_NAME: usize,
        const SEMAPHORES: usize,
        const QUEUE_INSTANCES: usize,
        const CARVEOUTS: usize,
        const UCODE_LIBS: usize,
        const SHORT_TEXT: usize,
        const DESC_DIMS: usize,
    > Document
    for DefJson<
        VARS,
        VAR_NAME,
        FILE_NAME,
        VAR_LIST,
        VAR_DIMS,
        QUEUES,
        QUEUE_NAME,
        SEMAPHORES,
        QUEUE_INSTANCES,
        CARVEOUTS,
        UCODE_LIBS,
        SHORT_TEXT,
        DESC_DIMS,
    >
{
    fn parse_into<R: BufRead, const S: usize, const D: u16>(
        &mut self,
        tok: &mut Tokenizer<S, D>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.read_document(tok, src, member)?;
        let end = tok.offset();
        let fail = |path: &[&str], e: ManifestError| {
            let mut p: heapless::String<96> = heapless::String::new();
            for (i, part) in path.iter().enumerate() {
                if i > 0 {
                    let _ = p.push('.');
                }
                let _ = p.push_str(part);
            }
            semantic(Stage::DefJson, member, end, &p, e)
        };
        for v in self.vars.iter() {
            if let Some(a) = v.alignment {
                if a != 0 && !a.is_power_of_two() {
                    return Err(fail(
                        &[Self::KEY_VARS, &v.name, <Var>::KEY_ALIGNMENT],
                        ManifestError::AlignmentNotPowerOfTwo(a),
                    ));
                }
            }
        }
        self.vars.sort_unstable_by_key(|v| v.var_id);
        let count = self.vars.len() as u64;
        if let Some(last) = self.vars.last() {
            if u64::from(last.var_id) + 1 != count {
                return Err(fail(&[Self::KEY_VARS], ManifestError::UnexpectedVarIds { max: last.var_id, size: count }));
            }
        }
        // Sorted with max + 1 == len: ids are 0..len exactly when no two are equal.
        for pair in self.vars.windows(2) {
            if let [a, b] = pair {
                if a.var_id == b.var_id {
                    return Err(fail(
                        &[Self::KEY_VARS, &b.name, <Var>::KEY_VAR_ID],
                        ManifestError::DuplicateVarId(b.var_id),
                    ));
                }
            }
        }
        if !self.vars.iter().any(|v| v.mr_type() == Some(MrType::Output)) {
            return Err(fail(&[Self::KEY_VARS], ManifestError::NoOutputs));
        }
        for q in self.dma_queues.iter().flat_map(|m| m.iter()) {
            if let Some(owner) = &q.owner {
                if EngineType::from_json(owner).is_none() {
                    let e = ManifestError::InvalidOwner(Text::new(owner));
                    return Err(fail(&[Self::KEY_DMA_QUEUES, &q.name, <DmaQueue>::KEY_OWNER], e));
                }
            }
            let kind = match q.base_ring_type() {
                Some(DmaRingType::In) => Some(QueueKind::Input),
                Some(DmaRingType::Out) => Some(QueueKind::Output),
                Some(DmaRingType::EmbeddingUpdate) => Some(QueueKind::EmbeddingUpdate),
                _ => None,
            };
            if let (Some(kind), Some(_)) = (kind, &q.queue_instances) {
                let e = ManifestError::QueueInstancesNotSupported { kind, queue: Text::new(&q.name) };
                return Err(fail(&[Self::KEY_DMA_QUEUES, &q.name, <DmaQueue>::KEY_QUEUE_INSTANCES], e));
            }
        }
        for engine in ENGINES {
            if self.engine_json(engine).is_none() {
                warn(sink, Stage::DefJson, member, end, engine.as_str(), ManifestWarning::EngineMissing(engine));
            }
        }
        Ok(())
    }
}
