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

use super::{warn, DefJson, Document, EngineJson, EngineType, ManifestWarning, Visitor};
use crate::error::Text;
use crate::json::Tokenizer;
use crate::{Error, Stage, WarningSink};

impl EngineJson {
    /// Number of DMA blocks (0 when `dma` is absent).
    pub fn dma_block_count(&self) -> u64 {
        self.dma.as_ref().map_or(0, |d| d.count)
    }
}

impl Document for EngineJson {
    /// Nothing beyond the document itself.
    type Facts = ();

    fn parse_into<R: BufRead, const S: usize, const D: u16>(
        &mut self,
        tok: &mut Tokenizer<S, D>,
        src: &mut R,
        member: &str,
        _sink: &mut impl WarningSink,
        visitor: &mut dyn Visitor,
    ) -> Result<(), Error> {
        self.read_document(tok, src, member, visitor)
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
                let w = ManifestWarning::InstrMismatch { engine, def_instr: Text::new(d), engine_instr: Text::new(e) };
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
