//! Engine JSONs (`sgNN/PE.json`, `Activation.json`, `DVE.json`, ...) and activation set JSONs.
//!
//! # Wire format
//!
//! `{"instr": "PE.bin", "name": "PE.json", "dma": [blocks...]}`; `Activation.json` adds
//! `act_info`, `act_semaphore` and `activation_function_sets` (set `S` is member `S.json`,
//! `{"bkt_bin": ..., "ctl_bin": ..., "profile_meta_data": [...]}`), `DVE.json` adds
//! `dve_tables` (`opcode_table`, `datapath_table`, `control_table` or `control_fast_table` +
//! `control_slow_table`). DMA blocks can be many: each is validated (descriptor `op` known,
//! required keys present) and counted, and only the last one is kept.
//!
//! Engine JSONs and set JSONs share one parser ([`EngineJson`]): the tar order does not say
//! which a member is (a set JSON can come before the `Activation.json` that names it), so the
//! loader reads every JSON of a subgraph directory once with the keys of both.

use embedded_io::BufRead;

use super::Document;

use super::{warn, DefJson, EngineJson, EngineType, ManifestWarning};
use crate::error::Text;
use crate::json::Tokenizer;
use crate::{Error, Stage, WarningSink};

impl<
        const VAR_NAME: usize,
        const FILE_NAME: usize,
        const QUEUE_NAME: usize,
        const SHORT_TEXT: usize,
        const ACT_SETS: usize,
        const DVE_TABLES: usize,
        const DESC_DIMS: usize,
    > EngineJson<VAR_NAME, FILE_NAME, QUEUE_NAME, SHORT_TEXT, ACT_SETS, DVE_TABLES, DESC_DIMS>
{
    /// Number of DMA blocks (0 when `dma` is absent).
    pub fn dma_block_count(&self) -> u64 {
        self.dma.as_ref().map_or(0, |d| d.count)
    }
}

impl<
        const VAR_NAME: usize,
        const FILE_NAME: usize,
        const QUEUE_NAME: usize,
        const SHORT_TEXT: usize,
        const ACT_SETS: usize,
        const DVE_TABLES: usize,
        const DESC_DIMS: usize,
    > Document for EngineJson<VAR_NAME, FILE_NAME, QUEUE_NAME, SHORT_TEXT, ACT_SETS, DVE_TABLES, DESC_DIMS>
{
    fn parse_into<R: BufRead, const S: usize, const D: u16>(
        &mut self,
        tok: &mut Tokenizer<S, D>,
        src: &mut R,
        member: &str,
        _sink: &mut impl WarningSink,
    ) -> Result<(), Error> {
        self.read_document(tok, src, member)
    }
}

/// The instruction stream of `engine`: the engine JSON's `instr` when present (the runtime
/// reads that one), else `def.json`'s `<eng>_instr`. When both are present and differ, a
/// warning goes to `sink` (`member` is the engine JSON's).
#[allow(clippy::too_many_arguments)]
pub fn resolve_instr<'a, const FILE_NAME: usize>(
    def_instr: Option<&'a str>,
    engine_instr: Option<&'a heapless::String<FILE_NAME>>,
    engine: EngineType,
    member: &str,
    sink: &mut impl WarningSink,
) -> Option<&'a str> {
    match (def_instr, engine_instr) {
        (Some(d), Some(e)) => {
            if d != e.as_str() {
                let w = ManifestWarning::InstrMismatch { engine, def_instr: Text::new(d), engine_instr: Text::new(e) };
                warn(sink, Stage::Engine, member, 0, <EngineJson>::KEY_INSTR, w);
            }
            Some(e.as_str())
        }
        (None, Some(e)) => Some(e.as_str()),
        (d, None) => d,
    }
}

/// [`resolve_instr`] for a parsed `def.json` and engine JSON.
pub fn engine_instr<
    'a,
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
    const ACT_SETS: usize,
    const DVE_TABLES: usize,
>(
    def: &'a DefJson<
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
    >,
    json: &'a EngineJson<VAR_NAME, FILE_NAME, QUEUE_NAME, SHORT_TEXT, ACT_SETS, DVE_TABLES, DESC_DIMS>,
    engine: EngineType,
    member: &str,
    sink: &mut impl WarningSink,
) -> Option<&'a str> {
    resolve_instr(def.engine_instr(engine), json.instr.as_ref(), engine, member, sink)
}
