//! Engine JSONs (`sgNN/PE.json`, `Activation.json`, `DVE.json`, ...) and activation set JSONs.
//!
//! # Wire format
//!
//! `{"instr": "PE.bin", "name": "PE.json", "dma": [blocks...]}`; `Activation.json` adds
//! `act_info`, `act_semaphore` and `activation_function_sets` (set `S` is member `S.json`,
//! `{"bkt_bin": ..., "ctl_bin": ..., "profile_meta_data": [...]}`), `DVE.json` adds
//! `dve_tables` (`opcode_table`, `datapath_table`, `control_table` or `control_fast_table` +
//! `control_slow_table`). DMA blocks and their descriptors can be many: each is validated (descriptor `op`
//! known, required keys present), handed to the visitor and counted; none is kept.
//!
//! Engine JSONs and set JSONs share one parser ([`EngineJson`]): the tar order does not say
//! which a member is (a set JSON can come before the `Activation.json` that names it), so the
//! loader reads every JSON of a subgraph directory once with the keys of both.

use embedded_io::BufRead;

use super::{
    warn, CceSource, DefJson, DmaDesc, Document, EngineJson, EngineType, Entry, EntryAt, ManifestError,
    ManifestWarning, Visitor,
};
use super::{DocFault, UcodeLib};
use crate::error::Text;
use crate::json::Tokenizer;
use crate::{Error, Stage, WarningSink};

impl DmaDesc {
    /// True for a type-converting copy: `"op": "cast"` (what real NEFFs write, §15.21) or the
    /// `cast` flag beside another op (§11.6). Its [`desc_op`](Self::desc_op) is COPY.
    pub fn is_cast(&self) -> bool {
        // The op value is spelled as the flag's key.
        self.cast == Some(true) || self.op.as_str() == Self::KEY_CAST
    }
}

impl EngineJson {
    /// Number of DMA blocks (0 when `dma` is absent).
    pub fn dma_block_count(&self) -> u64 {
        self.dma.as_ref().map_or(0, |d| d.count)
    }
}

/// The runtime's rules for one DMA descriptor (spec §8.2): no size is 0 (`Size cannot be 0`),
/// each side's steps and sizes have the same length, a descriptor reads `from` a variable
/// unless it is a CCE one (`from_arr`, at most 16 sources). Used by engine JSONs and by a
/// `def.json`'s top-level `dma`.
pub(crate) fn check_desc(d: &DmaDesc, at: &EntryAt<'_>) -> Result<(), DocFault> {
    match d.from_arr.as_ref().map(|sources| sources.count) {
        Some(n) if n > super::MAX_CCE_SOURCES => {
            return Err(at.key_error(DmaDesc::KEY_FROM_ARR, ManifestError::TooManyCceSources(n)));
        }
        // A CCE descriptor's access patterns carry their dtype; the runtime refuses one without.
        Some(_) if d.to_dtype.is_none() => {
            return Err(at.key_error(DmaDesc::KEY_TO_DTYPE, ManifestError::CceWithoutDtype));
        }
        None if d.from.is_none() => {
            return Err(at.key_error(DmaDesc::KEY_FROM, ManifestError::DescWithoutSource));
        }
        None if d.from_off.is_none() => {
            let e = ManifestError::MissingKey { key: &FROM_OFF, within: Text::new(at.name()) };
            return Err(at.key_error(DmaDesc::KEY_FROM_OFF, e));
        }
        _ => {}
    }
    check_side(at, (DmaDesc::KEY_FROM_SIZES, &d.from_sizes), (DmaDesc::KEY_FROM_STEPS, &d.from_steps))?;
    check_side(at, (DmaDesc::KEY_TO_SIZES, &d.to_sizes), (DmaDesc::KEY_TO_STEPS, &d.to_steps))
}

/// `from_off`, required on a descriptor that reads `from` a variable (§8.2).
static FROM_OFF: super::RequiredKey = super::RequiredKey { key: DmaDesc::KEY_FROM_OFF, message: "" };

/// The runtime's rules for one `ucode_lib` entry (spec §7.6), of a `def.json` or of the
/// library manifest it names; a library named twice is the loader's check across entries.
///
/// Only the version's major is compared: neuronx-cc 2.14 writes `"1.x.x.x"`. A `cpu_id` is
/// valid below `total_cpus`: the same compiler writes eight entries, `cpu_id` 0 to 7 of 8
/// (§15.21 withdraws the secondary pages' "must be 0").
pub(crate) fn check_ucode_lib(lib: &UcodeLib, at: &EntryAt<'_>) -> Result<(), DocFault> {
    let library = crate::error::Text::new(&lib.library);
    // The digits before the first dot, leading zeros aside, against the runtime's major: by
    // bytes, as the runtime's `atoi` of the major would see `"1.x.x.x"`, with no number parser.
    let version = lib.ulib_to_ucode_version.as_bytes();
    let major = version.split(|&b| b == b'.').next().unwrap_or(&[]);
    let major = major.get(major.iter().take_while(|&&b| b == b'0').count()..).unwrap_or(&[]);
    let mut digits = [0u8; 20];
    let cpus = lib.total_cpus.unwrap_or(0).max(1);
    // One error built at the end: one copy of the call that makes it.
    let (key, e) = if major != crate::error::decimal(u64::from(super::UCODE_MAJOR), &mut digits) {
        (UcodeLib::KEY_ULIB_TO_UCODE_VERSION, ManifestError::UcodeVersionMismatch(library))
    } else if let Some(cpu_id) = lib.cpu_id.filter(|&c| c >= cpus) {
        (UcodeLib::KEY_CPU_ID, ManifestError::UcodeCpuId { library, cpu_id })
    } else if let Some(total_cpus) = lib.total_cpus.filter(|c| !matches!(c, 0 | 1 | 8)) {
        (UcodeLib::KEY_TOTAL_CPUS, ManifestError::UcodeTotalCpus { library, total_cpus })
    } else {
        return Ok(());
    };
    Err(at.key_error(key, e))
}

/// One source of a CCE descriptor's `from_arr`: the `from` side's rules, and its dtype.
pub(crate) fn check_cce_source(s: &CceSource, at: &EntryAt<'_>) -> Result<(), DocFault> {
    if s.from_dtype.is_none() {
        return Err(at.key_error(CceSource::KEY_FROM_DTYPE, ManifestError::CceWithoutDtype));
    }
    check_side(at, (CceSource::KEY_FROM_SIZES, &s.from_sizes), (CceSource::KEY_FROM_STEPS, &s.from_steps))
}

type ShortString = heapless::String<{ super::cap::SHORT_TEXT }>;

type Dims<T> = Option<heapless::Vec<T, { super::cap::DESC_DIMS }>>;

/// One side of a transfer: no size is 0, as many steps as sizes.
fn check_side(
    at: &EntryAt<'_>,
    (sizes_key, sizes): (&'static str, &Dims<u64>),
    (steps_key, steps): (&'static str, &Dims<i64>),
) -> Result<(), DocFault> {
    if sizes.as_ref().is_some_and(|s| s.contains(&0)) {
        return Err(at.key_error(sizes_key, ManifestError::ZeroDescSize));
    }
    if let (Some(sizes), Some(steps)) = (sizes, steps) {
        if sizes.len() != steps.len() {
            let e = ManifestError::StepsSizesMismatch { steps: steps.len() as u8, sizes: sizes.len() as u8 };
            return Err(at.key_error(steps_key, e));
        }
    }
    Ok(())
}

/// Warns of descriptor dtype strings that neither the §11.2 map nor §8.2's list for the key
/// (`scale_dtype`, `constant_dtype`) has, naming them: the spec does not say the runtime
/// refuses them.
pub(crate) fn warn_unknown_dtypes(entry: &Entry<'_>, at: &EntryAt<'_>, sink: &mut dyn WarningSink) {
    let mut check = |key: &'static str, value: &Option<ShortString>, listed: fn(&str) -> bool| {
        if let Some(v) = value.as_deref().filter(|v| !listed(v)) {
            at.warn_unknown(sink, key, v);
        }
    };
    let kbin = |d: &str| super::KbinDtype::from_json(d).is_some();
    match *entry {
        Entry::DmaDesc(d) => {
            check(DmaDesc::KEY_FROM_DTYPE, &d.from_dtype, kbin);
            check(DmaDesc::KEY_TO_DTYPE, &d.to_dtype, kbin);
            check(DmaDesc::KEY_SCALE_DTYPE, &d.scale_dtype, |d| d == "float32");
            check(DmaDesc::KEY_CONSTANT_DTYPE, &d.constant_dtype, |d| matches!(d, "float32" | "int32" | "uint32"));
        }
        Entry::CceSource(s) => check(CceSource::KEY_FROM_DTYPE, &s.from_dtype, kbin),
        _ => {}
    }
}

/// Checks each descriptor as it passes, then hands it on.
struct Checks<'v> {
    inner: &'v mut dyn Visitor,
    sink: &'v mut dyn WarningSink,
}

impl Visitor for Checks<'_> {
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        match entry {
            Entry::DmaDesc(d) => check_desc(d, at)?,
            Entry::CceSource(s) => check_cce_source(s, at)?,
            Entry::ListedUcodeLib(lib) => check_ucode_lib(lib, at)?,
            _ => {}
        }
        warn_unknown_dtypes(&entry, at, self.sink);
        self.inner.entry(entry, at)
    }

    fn failed(&mut self, member: &str, path: Option<&str>, key: Option<&'static str>) {
        self.inner.failed(member, path, key);
    }
}

impl Document for EngineJson {
    /// Nothing beyond the document itself.
    type Facts = ();

    fn parse_into<R: BufRead>(
        &mut self,
        tok: &mut Tokenizer<'_>,
        src: &mut R,
        member: &str,
        sink: &mut impl WarningSink,
        visitor: &mut dyn Visitor,
    ) -> Result<(), Error> {
        self.read_document(tok, src, member, &mut Checks { inner: visitor, sink })
    }
}

/// The instruction stream of `engine`: the engine JSON's `instr` when present (the runtime
/// reads that one), else `def.json`'s `<eng>_instr`. When both are present and differ, a
/// warning goes to `sink` (`member` is the engine JSON's).
pub fn resolve_instr<'a>(
    def_instr: Option<&'a str>,
    engine_instr: Option<&'a str>,
    engine: EngineType,
    member: &str,
    sink: &mut impl WarningSink,
) -> Option<&'a str> {
    match (def_instr, engine_instr) {
        (Some(d), Some(e)) => {
            if d != e {
                let w = ManifestWarning::InstrMismatch {
                    engine: engine.value(),
                    def_instr: Text::new(d),
                    engine_instr: Text::new(e),
                };
                warn(sink, Stage::Engine, member, 0, EngineJson::KEY_INSTR, w);
            }
            Some(e)
        }
        (None, Some(e)) => Some(e),
        (d, None) => d,
    }
}

/// [`resolve_instr`] for a parsed `def.json` and engine JSON.
pub fn engine_instr<'a>(
    def: &'a DefJson,
    json: &'a EngineJson,
    engine: EngineType,
    member: &str,
    sink: &mut impl WarningSink,
) -> Option<&'a str> {
    resolve_instr(def.engine_instr(engine), json.instr.as_deref(), engine, member, sink)
}
