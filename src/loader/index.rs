//! The chain's index: what the manifests read so far name, kept in the caller's arena.
//!
//! Binding must remember a few things per manifest and per payload: which member is which
//! manifest, what each KELF, `def.json` and engine JSON names (graphs, engine JSONs,
//! instruction streams, tables, weights with their sizes and alignments, ucode libraries), and
//! what became of each payload. Everything else a manifest holds streams past. Each of these is
//! a fixed-size [`Record`] in one [`List`] of the [`Arena`]; names are [`Span`]s of it (or the
//! record's own tail), relative to their subgraph directory as the manifests write them.
//!
//! The index answers two questions: which members the chain reaches from `neff.json` (spec
//! §15.18: the chain, not file names, decides what is read), and what role a payload has. Both
//! follow one table, [`REFS`]: what names what, from which tier, as what.
//!
//! **Names are compared whole.** Every name the index keeps is printed at some point (a payload
//! report names its member, an error the member a manifest names and the tar lacks, a warning
//! both `instr` names), so a fingerprint in its place would save no byte, and no comparison here
//! can mis-bind. The only fingerprints are the DMA names' ([`super::dma`]), where the names are
//! never printed from the table and a collision could only let an unresolved name pass (2^-64
//! a pair, stated there).
//!
//! **What it costs.** A weight is one [`FileVarRec`] and its name (4 + [`FileVarRec::SIZE`] +
//! name bytes); any other payload one [`PayloadRec`] and its member path; a manifest one
//! [`ManifestRec`] and its path. A payload that landed has a [`Landing`] besides, which
//! [`Landings`] keeps in the device's notebook when the `Hal` lends one (nothing in the arena),
//! else in the arena ([`Landing::SIZE`] bytes). `docs/firmware.md` ("The arena a model needs")
//! has the whole formula, and `targets/host/cli/tests/arena.rs` checks it against the measured
//! peak.

use super::dma::{NameTable, Pending};
use crate::arena::{Arena, List, Reader, Record, Span, Writer, NIL};
pub use crate::error::ManifestKind;
use crate::error::{Error, ErrorKind};
use crate::hal::{DeviceError, Hal};
use crate::manifest::def::{EngineKey, ENGINE_KEYS};
use crate::manifest::neff::KelfMark;
use crate::manifest::{
    Arch, DefJson, EngineJson, EngineType, Entry, Graph, Kelf, NeffJson, Node, NodeAttrs, UcodeLib, UsageClass, Var,
};

/// Instruction streams and staging regions are aligned to one 64-byte instruction slot.
pub const INSTR_ALIGN: u64 = 64;

neff_macros::kinds!("schema/kinds.toml", Scratch);

/// Engine slots of a definition ([`crate::manifest::def::ENGINE_KEYS`]).
pub(crate) const ENGINE_SLOTS: usize = crate::manifest::def::ENGINE_KEYS.len();

/// A manifest member that was read, with its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ManifestRec {
    pub member: Span,
    pub kind: ManifestKind,
    /// The read failed; its error waits in the loader's deferred list (index), or was not
    /// kept ([`NO_SLOT`]).
    pub failed: Option<u16>,
    /// A later copy of the member replaced this one.
    pub superseded: bool,
    /// KELF: the target (`TARGET_ANY` for `*`, else the arch value).
    pub target: u8,
    /// KELF: graph count.
    pub graphs: u32,
    /// Engine: its `instr` (empty span with `has_instr` false when absent).
    pub instr: Span,
    pub has_instr: bool,
    /// Def: the position of its [`DefExt`] ([`NIL`] for the other kinds), which only the few
    /// definitions pay for.
    pub ext: u32,
}

/// What binding needs of a `def.json` besides its [`ManifestRec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DefExt {
    /// The definition's manifest record.
    pub def: u32,
    /// Its `file` variables, in declaration order: the weights it names.
    pub vars: List<FileVarRec>,
    /// Engine JSON names, then `<eng>_instr` names, in `ENGINE_KEYS` order (empty: absent).
    pub engines: [Span; ENGINE_SLOTS],
    pub engine_instrs: [Span; ENGINE_SLOTS],
    /// The cayman carveout facts ([`CarveoutFacts`]).
    pub carveouts: CarveoutFacts,
    /// Its queue and variable names, kept when an engine JSON it names was still to come
    /// ([`super::dma`]).
    pub names: Option<NameTable>,
}

impl Default for DefExt {
    fn default() -> Self {
        Self {
            def: NIL,
            vars: List::new(),
            engines: Default::default(),
            engine_instrs: Default::default(),
            carveouts: CarveoutFacts::default(),
            names: None,
        }
    }
}

impl Record for DefExt {
    const SIZE: usize = 4 + List::<FileVarRec>::ENCODED + 2 * ENGINE_SLOTS * Span::ENCODED + 1 + 1 + 8 + 8 + 4 + 4;
    fn encode(&self, out: &mut [u8]) {
        let mut w = Writer::new(out);
        w.u32(self.def).list(&self.vars);
        for s in self.engines.iter().chain(self.engine_instrs.iter()) {
            w.span(*s);
        }
        w.u8(u8::from(self.carveouts.present))
            .u8(self.carveouts.violation)
            .u64(self.carveouts.index)
            .u64(self.carveouts.value)
            .u32(self.names.map_or(NIL, |t| t.at))
            .u32(self.names.map_or(0, |t| t.count));
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let mut ext = DefExt { def: r.u32(), vars: r.list(), ..DefExt::default() };
        for s in ext.engines.iter_mut().chain(ext.engine_instrs.iter_mut()) {
            *s = r.span();
        }
        ext.carveouts = CarveoutFacts { present: r.u8() != 0, violation: r.u8(), index: r.u64(), value: r.u64() };
        let (at, count) = (r.u32(), r.u32());
        ext.names = (at != NIL).then_some(NameTable { at, count });
        ext
    }
}

/// A deferred error that could not be kept (more failed speculative reads than slots).
pub(crate) const NO_SLOT: u16 = u16::MAX;
/// KELF `target` `*`.
pub(crate) const TARGET_ANY: u8 = u8::MAX;

/// What the cayman carveout rules need of a `def.json` (spec §7.7), which may be read before
/// the KELF that says whether they apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CarveoutFacts {
    pub present: bool,
    /// 0: no violation; 1..=4: start partition, partition count, offset, size.
    pub violation: u8,
    pub index: u64,
    pub value: u64,
}

impl CarveoutFacts {
    pub fn from_def(facts: &crate::manifest::def::DefFacts) -> Self {
        use crate::manifest::ManifestError as M;
        let (violation, index, value) = match facts.cayman_violation {
            Some((i, M::CarveoutStartPartition(v))) => (1, i, v),
            Some((i, M::CarveoutPartitionCount(v))) => (2, i, v),
            Some((i, M::CarveoutOffset(v))) => (3, i, v),
            Some((i, M::CarveoutSize(v))) => (4, i, v),
            _ => (0, 0, 0),
        };
        Self { present: facts.carveouts_present, violation, index, value }
    }

    /// Back to the def facts' form, for [`DefFacts::check_carveouts`](crate::manifest::def::DefFacts::check_carveouts).
    pub fn to_def(self) -> crate::manifest::def::DefFacts {
        use crate::manifest::ManifestError as M;
        let violation = match self.violation {
            1 => Some((self.index, M::CarveoutStartPartition(self.value))),
            2 => Some((self.index, M::CarveoutPartitionCount(self.value))),
            3 => Some((self.index, M::CarveoutOffset(self.value))),
            4 => Some((self.index, M::CarveoutSize(self.value))),
            _ => None,
        };
        crate::manifest::def::DefFacts {
            carveouts_present: self.present,
            cayman_violation: violation,
            ..Default::default()
        }
    }
}

impl Record for ManifestRec {
    const SIZE: usize = Span::ENCODED + 1 + 2 + 1 + 1 + 4 + Span::ENCODED + 4;
    fn encode(&self, out: &mut [u8]) {
        let mut w = Writer::new(out);
        w.span(self.member)
            .u8(self.kind.code())
            .u16(self.failed.unwrap_or(0))
            .u8(u8::from(self.failed.is_some()) | (u8::from(self.superseded) << 1) | (u8::from(self.has_instr) << 2))
            .u8(self.target)
            .u32(self.graphs)
            .span(self.instr)
            .u32(self.ext);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let member = r.span();
        let kind = ManifestKind::from_code(r.u8()).unwrap_or(ManifestKind::Engine);
        let slot = r.u16();
        let flags = r.u8();
        let target = r.u8();
        let graphs = r.u32();
        let instr = r.span();
        let ext = r.u32();
        ManifestRec {
            member,
            kind,
            failed: (flags & 1 != 0).then_some(slot),
            superseded: flags & 2 != 0,
            target,
            graphs,
            instr,
            has_instr: flags & 4 != 0,
            ext,
        }
    }
}

impl ManifestRec {
    pub fn new(member: Span, kind: ManifestKind) -> Self {
        Self {
            member,
            kind,
            failed: None,
            superseded: false,
            target: 0,
            graphs: 0,
            instr: Span::EMPTY,
            has_instr: false,
            ext: NIL,
        }
    }

    /// The KELF target, `None` for `*`.
    pub fn target_arch(&self) -> Option<Arch> {
        if self.target == TARGET_ANY {
            None
        } else {
            Arch::from_value(u32::from(self.target))
        }
    }
}

/// A KELF graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GraphRec {
    /// The KELF's manifest record.
    pub kelf: u32,
    pub name: Span,
    pub definition: Span,
    /// Its index in the KELF's `graphs` ([`NO_INDEX`]: past `u16`).
    pub index: u16,
}

impl Record for GraphRec {
    const SIZE: usize = 4 + 2 * Span::ENCODED + 2;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).u32(self.kelf).span(self.name).span(self.definition).u16(self.index);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        GraphRec { kelf: r.u32(), name: r.span(), definition: r.span(), index: r.u16() }
    }
}

/// A KELF member `neff.json` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KelfNameRec {
    pub name: Span,
    pub mark: KelfMark,
    /// Its node's index in `nodes` ([`NO_INDEX`]: past `u16`).
    pub index: u16,
}

impl Record for KelfNameRec {
    const SIZE: usize = Span::ENCODED + 1 + 2;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).span(self.name).u8(u8::from(self.mark == KelfMark::Op)).u16(self.index);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let name = r.span();
        let mark = if r.u8() == 0 { KelfMark::FuncName } else { KelfMark::Op };
        KelfNameRec { name, mark, index: r.u16() }
    }
}

/// A member read as the manifest its name suggests before anything named it, whose bytes
/// wait in the loader's replay store until the chain says what it is: the kind it was read
/// as stands, or it is read again as the kind it is named as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReplayRec {
    pub member: Span,
    /// The kind it was read as.
    pub kind: ManifestKind,
    /// Where its bytes start in the replay store, and how many there are.
    pub at: u32,
    pub len: u32,
    /// Its bytes did not fit the replay store: only the first reading stands.
    pub lost: bool,
}

impl Record for ReplayRec {
    const SIZE: usize = Span::ENCODED + 1 + 4 + 4 + 1;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).span(self.member).u8(self.kind.code()).u32(self.at).u32(self.len).u8(u8::from(self.lost));
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let member = r.span();
        let kind = ManifestKind::from_code(r.u8()).unwrap_or(ManifestKind::Engine);
        ReplayRec { member, kind, at: r.u32(), len: r.u32(), lost: r.u8() != 0 }
    }
}

/// A `file` variable of a `def.json`: a weight, and, once its member has streamed in, what
/// became of it. Kept in its definition's [`DefExt::vars`], its name (as the manifest writes
/// it, relative to the directory) in its tail.
///
/// A weight's placement lives here rather than in a [`PayloadRec`] of its own: the weights are
/// most of a model's payloads, and this way each costs one record and one name, and its
/// [`Landing`]'s slot once it lands. A weight lands here only with the declared size (or none
/// declared); one that disagrees is kept as a [`PayloadRec`], and the binder refuses it there
/// as it would here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileVarRec {
    /// Its `file_name` (the record's tail).
    pub file: Span,
    pub size: Option<u64>,
    /// Alignment, as its base-2 logarithm (the def checks make it a power of two below 2^64).
    pub align_log2: u8,
    /// Its member's [`Landing`] once it streamed in: a slot of [`Landings`] ([`NIL`] before).
    pub landed: u32,
    /// The landing holds its place (not released): [`Landing::is_kept`], kept here so that
    /// lookups need not read the landing back.
    pub kept: bool,
}

impl FileVarRec {
    /// Bit of the flags byte: a size is declared.
    const HAS_SIZE: u8 = 0x40;
    /// Bit of the flags byte: [`FileVarRec::kept`].
    const KEPT: u8 = 0x80;
    /// The size field's value for a size that does not fit it: the size is the first 8 bytes
    /// of the tail, before the name.
    const WIDE: u32 = u32::MAX;

    /// A variable of `file_len` name bytes, not landed.
    pub fn new(file_len: usize, size: Option<u64>, align_log2: u8) -> Self {
        let file = Span { at: 0, len: u32::try_from(file_len).unwrap_or(u32::MAX) };
        Self { file, size, align_log2: align_log2 & 0x3f, landed: NIL, kept: false }
    }

    /// What its tail holds before the name: the declared size when the record's 4-byte field
    /// cannot (4 GiB and more; weights are far smaller, so a weight record is 4 bytes shorter
    /// than with an 8-byte field).
    pub fn tail_head(&self) -> Option<[u8; 8]> {
        self.size.filter(|&s| s >= u64::from(Self::WIDE)).map(u64::to_le_bytes)
    }

    /// The alignment in bytes.
    pub fn align(&self) -> u64 {
        1u64.checked_shl(u32::from(self.align_log2)).unwrap_or(1)
    }

    /// Whether its member streamed in and still holds its place.
    pub fn is_kept(&self) -> bool {
        self.landed != NIL && self.kept
    }

    /// Whether its member streamed in (released since or not).
    pub fn has_landed(&self) -> bool {
        self.landed != NIL
    }
}

impl Record for FileVarRec {
    const SIZE: usize = 2 + 4 + 1 + 4;
    fn encode(&self, out: &mut [u8]) {
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        let flags = self.align_log2 | flag(self.size.is_some(), Self::HAS_SIZE) | flag(self.kept, Self::KEPT);
        let size = self.size.map_or(0, |s| u32::try_from(s).unwrap_or(Self::WIDE));
        let mut w = Writer::new(out);
        w.u16(u16::try_from(self.file.len).unwrap_or(u16::MAX)).u32(size).u8(flags).u32(self.landed);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let file = Span { at: 0, len: u32::from(r.u16()) };
        let size = r.u32();
        let flags = r.u8();
        let landed = r.u32();
        // A wide size is read from the tail ([`Record::tail_at`]): `u64::MAX` until then.
        let size = (flags & Self::HAS_SIZE != 0).then(|| if size == Self::WIDE { u64::MAX } else { u64::from(size) });
        FileVarRec { file, size, align_log2: flags & 0x3f, landed, kept: flags & Self::KEPT != 0 }
    }
    fn tail_at(&mut self, at: u32, arena: &Arena<'_>) {
        self.file.at = at;
        if self.size == Some(u64::MAX) {
            // Written as `tail_head` says: every size from `WIDE` up, `u64::MAX` included.
            self.size = Some(arena.u64_at(at));
            self.file.at = at.saturating_add(8);
        }
    }
}

/// What became of a payload member that streamed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Landing {
    /// Its position among the archive's payload members (the report's order).
    pub seq: u32,
    /// A [`PayloadState`](super::report::PayloadState) code, or [`Landing::NOT_LANDED`].
    pub state: u8,
    /// A [`usage_code`].
    pub usage: u8,
    /// `u8::MAX`: no core yet.
    pub core: u8,
    /// [`NIL`](crate::arena::NIL): no region.
    pub region: u32,
    /// Bytes that landed.
    pub len: u64,
    /// Bytes of the member before them (a `.npy` header: at most 12 + the parser's 256).
    pub header_len: u16,
    pub digest: u64,
}

impl Landing {
    /// Bytes of the encoded form, one note of a device's notebook: sequence, state and usage
    /// in one byte (3 bits and 5: [`USAGE_CLASS_COUNT`](crate::hal::USAGE_CLASS_COUNT) is below
    /// 32), core, region, header length, digest, length.
    pub const SIZE: usize = 4 + 1 + 1 + 4 + 2 + 8 + 8;
    /// The state of a weight whose member has not streamed in.
    pub const NOT_LANDED: u8 = u8::MAX;
    /// [`Landing::NOT_LANDED`] in the state's three bits.
    const NOT_LANDED_BITS: u8 = 7;
    /// Nothing landed.
    pub const NONE: Landing = Landing {
        seq: 0,
        state: Self::NOT_LANDED,
        usage: 0,
        core: u8::MAX,
        region: crate::arena::NIL,
        len: 0,
        header_len: 0,
        digest: 0,
    };

    /// Whether a member landed and still holds its place (not released).
    pub fn is_kept(&self) -> bool {
        self.state != Self::NOT_LANDED && self.state != super::report::PayloadState::Released.code()
    }

    /// Size of the member in the tar.
    pub fn member_len(&self) -> u64 {
        self.len.saturating_add(u64::from(self.header_len))
    }

    fn write(&self, w: &mut Writer<'_>) {
        let state = if self.state == Self::NOT_LANDED { Self::NOT_LANDED_BITS } else { self.state & 7 };
        w.u32(self.seq)
            .u8(state | (self.usage << 3))
            .u8(self.core)
            .u32(self.region)
            .u16(self.header_len)
            .u64(self.digest)
            .u64(self.len);
    }

    fn read(r: &mut Reader<'_>) -> Self {
        let seq = r.u32();
        let packed = r.u8();
        let state = match packed & 7 {
            Self::NOT_LANDED_BITS => Self::NOT_LANDED,
            s => s,
        };
        Landing {
            seq,
            state,
            usage: packed >> 3,
            core: r.u8(),
            region: r.u32(),
            header_len: r.u16(),
            digest: r.u64(),
            len: r.u64(),
        }
    }
}

static_assertions::const_assert_eq!(Landing::SIZE, crate::hal::LANDING_NOTE);

/// Where each payload's [`Landing`] is kept: a slot of the device's notebook
/// ([`Hal::notebook_len`]) while it has room, else [`Landing::SIZE`] bytes of the arena. A
/// record names its landing by that slot, so the controller keeps 4 bytes a payload when the
/// device keeps the notes. A slot whose landing is read no more (a replaced copy's, a staged
/// copy's that the chain took as a manifest) is given back ([`Landings::forget`]) and taken by
/// the next landing, so copies of a member cost no slot each.
#[derive(Debug)]
pub(crate) struct Landings {
    /// Notebook slots handed out.
    noted: u32,
    /// Notebook slots the device has.
    room: u32,
    /// The notebook byte new landings stay below: what lies above is the pending DMA
    /// references' ([`Landings::limit`]).
    ceiling: u64,
    /// The first slot given back ([`NIL`]: none), each linked to the next by its first 4 bytes.
    free: u32,
}

impl Default for Landings {
    fn default() -> Self {
        Self::new(0)
    }
}

/// The bit of a landing slot that says it is in the notebook (else it is an arena position).
const NOTED: u32 = 1 << 31;

impl Landings {
    /// A store over a notebook of `notebook_len` bytes (`0`: the arena only).
    pub fn new(notebook_len: u64) -> Self {
        let room = notebook_len.checked_div(Landing::SIZE as u64).unwrap_or(0);
        let room = u32::try_from(room).unwrap_or(u32::MAX).min(NOTED - 1);
        Self { noted: 0, room, ceiling: notebook_len, free: NIL }
    }

    /// Notebook bytes the landings use, from its start.
    pub fn floor(&self) -> u64 {
        u64::from(self.noted).saturating_mul(Landing::SIZE as u64)
    }

    /// Keeps new landings below byte `ceiling` of the notebook (what lies above is the pending
    /// DMA references'); further ones go to the arena.
    pub fn limit(&mut self, ceiling: u64) {
        self.ceiling = ceiling;
    }

    /// Keeps a new landing and returns its slot: one given back, else a new one.
    pub fn keep<H: Hal>(&mut self, hal: &mut H, arena: &mut Arena<'_>, landing: &Landing) -> Result<u32, ErrorKind> {
        let slot = if self.free != NIL {
            let slot = self.free;
            self.free = Reader::new(&Self::fetch(hal, arena, slot)?).u32();
            slot
        } else if self.noted < self.room && self.floor().saturating_add(Landing::SIZE as u64) <= self.ceiling {
            // Below `room`, itself below `NOTED`: neither the count nor the bit overflows.
            let slot = self.noted | NOTED;
            self.noted = self.noted.saturating_add(1);
            slot
        } else {
            let at = arena.alloc(Landing::SIZE)?;
            if at & NOTED != 0 {
                // An arena past 2 GiB: the slot's bit is taken. Say how much was in use.
                return Err(ErrorKind::ArenaFull { capacity: u64::from(NOTED), needed: u64::from(at) });
            }
            at
        };
        self.set(hal, arena, slot, landing)?;
        Ok(slot)
    }

    /// Gives `slot` back: nothing reads its landing again, and the next landing takes it.
    pub fn forget<H: Hal>(&mut self, hal: &mut H, arena: &mut Arena<'_>, slot: u32) -> Result<(), ErrorKind> {
        let mut bytes = [0u8; Landing::SIZE];
        Writer::new(&mut bytes).u32(self.free);
        Self::put(hal, arena, slot, &bytes)?;
        self.free = slot;
        Ok(())
    }

    /// The landing in `slot`.
    pub fn get<H: Hal>(&self, hal: &H, arena: &Arena<'_>, slot: u32) -> Result<Landing, ErrorKind> {
        Ok(Landing::read(&mut Reader::new(&Self::fetch(hal, arena, slot)?)))
    }

    /// Overwrites the landing in `slot`.
    pub fn set<H: Hal>(
        &self,
        hal: &mut H,
        arena: &mut Arena<'_>,
        slot: u32,
        landing: &Landing,
    ) -> Result<(), ErrorKind> {
        let mut bytes = [0u8; Landing::SIZE];
        landing.write(&mut Writer::new(&mut bytes));
        Self::put(hal, arena, slot, &bytes)
    }

    /// The bytes of `slot`, from the notebook or the arena.
    fn fetch<H: Hal>(hal: &H, arena: &Arena<'_>, slot: u32) -> Result<[u8; Landing::SIZE], ErrorKind> {
        let mut bytes = [0u8; Landing::SIZE];
        match Self::note_at(slot) {
            Some(at) => hal.recall(at, &mut bytes).map_err(|e| ErrorKind::Hal(e.kind()))?,
            None => bytes = arena.read(slot),
        }
        Ok(bytes)
    }

    /// Writes the bytes of `slot`, to the notebook or the arena.
    fn put<H: Hal>(
        hal: &mut H,
        arena: &mut Arena<'_>,
        slot: u32,
        bytes: &[u8; Landing::SIZE],
    ) -> Result<(), ErrorKind> {
        match Self::note_at(slot) {
            Some(at) => hal.note(at, bytes).map_err(|e| ErrorKind::Hal(e.kind())),
            None => {
                arena.write(slot, bytes);
                Ok(())
            }
        }
    }

    /// The notebook byte offset of `slot`, if it is a notebook slot.
    fn note_at(slot: u32) -> Option<u64> {
        (slot & NOTED != 0 && slot != NIL).then(|| u64::from(slot & !NOTED).saturating_mul(Landing::SIZE as u64))
    }
}

/// A name a manifest gives to another member, of a [`RefKind`] whose row keeps its names
/// here ([`Store::Names`]): a ucode library of a `def.json`, an activation set, a table of an
/// engine JSON. The name is the record's tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameRec {
    /// The naming manifest's record.
    pub by: u32,
    pub kind: RefKind,
    pub name: Span,
    /// The naming entry's index in its array ([`NO_INDEX`]: none, or past `u16`).
    pub index: u16,
}

impl Record for NameRec {
    const SIZE: usize = 4 + 1 + 2 + 2;
    fn encode(&self, out: &mut [u8]) {
        let len = u16::try_from(self.name.len).unwrap_or(u16::MAX);
        Writer::new(out).u32(self.by).u8(self.kind as u8).u16(len).u16(self.index);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let by = r.u32();
        let kind = RefKind::from_code(r.u8()).unwrap_or(RefKind::DveTable);
        let name = Span { at: 0, len: u32::from(r.u16()) };
        NameRec { by, kind, name, index: r.u16() }
    }
    fn tail_at(&mut self, at: u32, _arena: &Arena<'_>) {
        self.name.at = at;
    }
}

/// A payload member that is not a weight (or streamed in before the `def.json` naming it),
/// with what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PayloadRec {
    /// Its path (a span of its own, or of the manifest record of a member read both ways).
    pub member: Span,
    /// Its [`Landing`]: a slot of [`Landings`].
    pub landed: u32,
    /// The landing holds its place ([`Landing::is_kept`]), kept here so that lookups need not
    /// read the landing back.
    pub kept: bool,
    /// Nothing had named the member when it came, and it may be no payload: it was also read
    /// as a manifest, or it bears a producer metadata name. When the chain gives it no
    /// payload role, its staged copy goes without an `unreferenced` warning.
    pub quiet: bool,
    /// Reading it failed (a `.npy` header) before anything named it: the deferred error's slot,
    /// reported only if the chain reaches the member ([`NO_SLOT`]: not kept).
    pub failed: Option<u16>,
}

impl Record for PayloadRec {
    const SIZE: usize = Span::ENCODED + 4 + 1 + 2;
    fn encode(&self, out: &mut [u8]) {
        let mut w = Writer::new(out);
        w.span(self.member).u32(self.landed);
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        let flags = flag(self.kept, 1) | flag(self.quiet, 2) | flag(self.failed.is_some(), 4);
        w.u8(flags).u16(self.failed.unwrap_or(NO_SLOT));
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let member = r.span();
        let landed = r.u32();
        let flags = r.u8();
        let slot = r.u16();
        PayloadRec {
            member,
            landed,
            kept: flags & 1 != 0,
            quiet: flags & 2 != 0,
            failed: (flags & 4 != 0).then_some(slot),
        }
    }
}

/// A tier of the chain: the manifest that holds a naming key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// `neff.json`.
    Neff,
    /// A KELF descriptor.
    Kelf,
    /// A subgraph definition.
    Def,
    /// An engine JSON; `Some`: only that engine's.
    Engine(Option<EngineKey>),
    /// An activation set JSON.
    ActSet,
    /// A GPSIMD library manifest (`ucode_lib.json`, spec §7.6).
    UcodeLibs,
}

impl Tier {
    /// Whether a row whose naming manifest is of this tier applies to a manifest of `tier`:
    /// `Engine(None)` covers every engine JSON, anything else only itself.
    fn covers(self, tier: Tier) -> bool {
        match (self, tier) {
            (Tier::Engine(None), Tier::Engine(_)) => true,
            (a, b) => a == b,
        }
    }
}

/// What a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    /// A manifest of this tier.
    Manifest(Tier),
    /// A payload of this usage class; `None`: the class of the engine naming it
    /// (the usage the engine's slot gives).
    Payload(Option<UsageClass>),
}

/// Where the index keeps the names of one kind of reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Store {
    /// [`KelfNameRec`]s.
    KelfNames,
    /// [`GraphRec`]s.
    Graphs,
    /// The definition's engine slots ([`DefExt::engines`]).
    EngineSlots,
    /// The definition's `file` variables ([`DefExt::vars`]).
    FileVars,
    /// The engine JSON's `instr` ([`ManifestRec::instr`]), else its definition's
    /// `<eng>_instr` ([`DefExt::engine_instrs`]; spec §15.15).
    Instr,
    /// [`NameRec`]s of this kind, by the naming manifest.
    Names,
}

/// Takes each name a streamed entry gives.
pub(crate) type NameSink<'s> = dyn FnMut(&str) -> Result<(), ErrorKind> + 's;

/// How the walk finds the names of a [`Store::Names`] kind while a manifest streams: from one
/// of its entries, or from its scalar keys once it is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Source {
    /// Kept by another store.
    Other,
    /// Each name an entry gives.
    Entry(fn(&Entry<'_>, &mut NameSink<'_>) -> Result<(), ErrorKind>),
    /// The name a scalar key of the manifest gives, once it is read (an engine JSON's
    /// `bkt_bin`, a definition's `ucode_lib` string).
    Scalar(fn(&Scratch) -> Option<&str>),
}

/// One row of the table of references ([`REFS`]): a kind of key that names another member.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row {
    pub kind: RefKind,
    /// The naming key's path in the naming manifest (for messages); empty for an engine slot,
    /// whose key is the engine's ([`EngineKey::as_str`]).
    pub key: &'static [&'static str],
    /// The tier whose manifest holds the key.
    pub by: Tier,
    /// What it names.
    pub names: Names,
    /// Appended to the name to make the member's (`S` names `S.json`).
    pub suffix: &'static str,
    /// Where the index keeps the names.
    pub store: Store,
    /// How the walk records them ([`Store::Names`]).
    pub source: Source,
}

/// A kind of reference: a row of [`REFS`]. Its code in a [`NameRec`] is its row's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RefKind {
    /// `neff.json` `nodes[].attrs.kelf`.
    Kelf,
    /// KELF `graphs[].definition`.
    Definition,
    /// A `def.json` engine key (`pe`, `act`, ..., `q7`).
    Engine,
    /// A `def.json` `var[].file_name`: a weight.
    Weight,
    /// A `def.json` `ucode_libs[].library`.
    UcodeLib,
    /// A `def.json` `ucode_lib` given as a string: the member holding the libraries.
    UcodeLibJson,
    /// A library manifest's `ucode_lib[].library`.
    ListedUcodeLib,
    /// An engine JSON's `instr` (or its definition's `<eng>_instr`).
    Instr,
    /// A DVE engine JSON's `dve_tables[]` members.
    DveTable,
    /// An activation engine JSON's `activation_function_sets[]`: `S` names `S.json`.
    ActSet,
    /// An activation set JSON's `bkt_bin`.
    ActBucketTable,
    /// An activation set JSON's `ctl_bin`.
    ActControlTable,
}

const DVE: Tier = Tier::Engine(Some(EngineKey::Tpb(EngineType::Dve)));
const ACT: Tier = Tier::Engine(Some(EngineKey::Tpb(EngineType::Act)));

/// An entry's index in its array when it has none, or one past `u16` (key paths then show
/// none).
pub(crate) const NO_INDEX: u16 = u16::MAX;

/// The table of what names what: one row a kind of reference, in [`RefKind`] order. Within a
/// tier, references are walked in this order (a member named twice takes the first role). A
/// new kind of payload is one row here (and, when its names come from a new entry or key,
/// the function that reads them).
#[rustfmt::skip]
pub(crate) static REFS: [Row; 12] = {
    use Names::{Manifest, Payload};
    use RefKind as K;
    use Source::Other;
    [
        row(K::Kelf, &[NeffJson::KEY_NODES, Node::KEY_ATTRS, NodeAttrs::KEY_KELF], Tier::Neff, Manifest(Tier::Kelf), Store::KelfNames, Other),
        row(K::Definition, &[Kelf::KEY_GRAPHS, Graph::KEY_DEFINITION], Tier::Kelf, Manifest(Tier::Def), Store::Graphs, Other),
        row(K::Engine, &[], Tier::Def, Manifest(Tier::Engine(None)), Store::EngineSlots, Other),
        row(K::Weight, &[DefJson::KEY_VARS, Var::KEY_FILE_NAME], Tier::Def, Payload(Some(UsageClass::Weight)), Store::FileVars, Other),
        row(K::UcodeLib, &[DefJson::KEY_UCODE_LIBS, UcodeLib::KEY_LIBRARY], Tier::Def, Payload(Some(UsageClass::UcodeLib)), Store::Names, Source::Entry(ucode_libs)),
        row(K::UcodeLibJson, &[DefJson::KEY_UCODE_LIBS], Tier::Def, Manifest(Tier::UcodeLibs), Store::Names, Source::Scalar(ucode_lib_json)),
        row(K::ListedUcodeLib, &[EngineJson::KEY_UCODE_LIBS, UcodeLib::KEY_LIBRARY], Tier::UcodeLibs, Payload(Some(UsageClass::UcodeLib)), Store::Names, Source::Entry(listed_ucode_libs)),
        row(K::Instr, &[EngineJson::KEY_INSTR], Tier::Engine(None), Payload(None), Store::Instr, Other),
        // §11.8 publishes no DVE-table class.
        row(K::DveTable, &[EngineJson::KEY_DVE_TABLES], DVE, Payload(Some(UsageClass::Generic)), Store::Names, Source::Entry(dve_tables)),
        Row { suffix: ".json", ..row(K::ActSet, &[EngineJson::KEY_ACTIVATION_FUNCTION_SETS], ACT, Manifest(Tier::ActSet), Store::Names, Source::Entry(act_sets)) },
        row(K::ActBucketTable, &[EngineJson::KEY_BKT_BIN], Tier::ActSet, Payload(Some(UsageClass::ActTable)), Store::Names, Source::Scalar(bkt_bin)),
        row(K::ActControlTable, &[EngineJson::KEY_CTL_BIN], Tier::ActSet, Payload(Some(UsageClass::ActTable)), Store::Names, Source::Scalar(ctl_bin)),
    ]
};

/// A row with no suffix.
const fn row(kind: RefKind, key: &'static [&'static str], by: Tier, names: Names, store: Store, source: Source) -> Row {
    Row { kind, key, by, names, suffix: "", store, source }
}

/// What key `key_path` of a manifest of `tier` names, as the loader follows it, with the
/// suffix the name takes (an activation set `S` is member `S.json`): the rows of the loader's table of references (`REFS`), a
/// definition's engine slots (`pe`: an engine JSON) and their `<eng>_instr`. `key_path` is a
/// path of the document (`nodes[3].attrs.kelf`, `var.w.file_name`, `dve_tables[0].datapath_table`):
/// indices are ignored, and a key of the table may sit below a map's entry or above a table's
/// own key. `None`: the loader follows no member from it. For tools that show what the chain
/// reaches (`neff ls`), so that they follow the loader's keys, not their own.
pub fn named_by(tier: Tier, key_path: &str) -> Option<(Names, &'static str)> {
    let mut segments = key_path.split('.').map(|k| k.split_once('[').map_or(k, |(key, _)| key));
    let first = segments.next()?;
    if tier == Tier::Def && key_path == first {
        for e in ENGINE_KEYS {
            if first == e.as_str() {
                return Some((Names::Manifest(Tier::Engine(Some(e))), ""));
            }
            if first.strip_suffix("_instr") == Some(e.as_str()) {
                return Some((Names::Payload(Some(usage_of_engine(e))), ""));
            }
        }
    }
    // The row with the most keys that fits: `ucode_lib[0].library` is a library, not the
    // libraries' manifest that a `ucode_lib` string names.
    REFS.iter()
        .filter(|r| r.by.covers(tier) && r.key.first() == Some(&first))
        .filter(|r| {
            let mut rest = segments.clone();
            r.key.iter().skip(1).all(|k| rest.any(|s| s == *k))
        })
        .max_by_key(|r| r.key.len())
        .map(|r| (r.names, r.suffix))
}

impl RefKind {
    /// Its row of [`REFS`].
    pub fn row(self) -> Option<&'static Row> {
        REFS.get(self as usize)
    }

    fn from_code(c: u8) -> Option<Self> {
        REFS.get(usize::from(c)).map(|r| r.kind)
    }

    /// The naming key as a key path for messages, with the naming entry's `index` in the
    /// array its first key holds (`nodes[2].attrs.kelf`; [`NO_INDEX`]: none, `var.file_name`).
    pub fn key_path(self, index: u16) -> heapless::String<64> {
        let mut out = heapless::String::new();
        for (i, k) in self.row().map_or(&[][..], |r| r.key).iter().enumerate() {
            if i > 0 {
                let _ = out.push('.');
            }
            let _ = out.push_str(k);
            if i == 0 && index != NO_INDEX {
                let _ = out.push('[').is_ok()
                    && crate::error::push_decimal(&mut out, u64::from(index))
                    && out.push(']').is_ok();
            }
        }
        out
    }
}

fn ucode_libs(e: &Entry<'_>, f: &mut NameSink<'_>) -> Result<(), ErrorKind> {
    match e {
        Entry::UcodeLib(lib) => f(&lib.library),
        _ => Ok(()),
    }
}

fn listed_ucode_libs(e: &Entry<'_>, f: &mut NameSink<'_>) -> Result<(), ErrorKind> {
    match e {
        Entry::ListedUcodeLib(lib) => f(&lib.library),
        _ => Ok(()),
    }
}

fn ucode_lib_json(doc: &Scratch) -> Option<&str> {
    match doc {
        Scratch::Def(doc) => doc.ucode_libs.as_ref()?.name.as_deref(),
        _ => None,
    }
}

fn act_sets(e: &Entry<'_>, f: &mut NameSink<'_>) -> Result<(), ErrorKind> {
    match e {
        Entry::ActSet(set) => f(set),
        _ => Ok(()),
    }
}

fn dve_tables(e: &Entry<'_>, f: &mut NameSink<'_>) -> Result<(), ErrorKind> {
    match e {
        Entry::DveTables(t) => {
            [&t.opcode_table, &t.datapath_table, &t.control_table, &t.control_fast_table, &t.control_slow_table]
                .into_iter()
                .flatten()
                .try_for_each(|table| f(table))
        }
        _ => Ok(()),
    }
}

fn bkt_bin(doc: &Scratch) -> Option<&str> {
    match doc {
        Scratch::Engine(doc) => doc.bkt_bin.as_deref(),
        _ => None,
    }
}

fn ctl_bin(doc: &Scratch) -> Option<&str> {
    match doc {
        Scratch::Engine(doc) => doc.ctl_bin.as_deref(),
        _ => None,
    }
}

/// The usage class of an engine's instruction stream.
pub(crate) fn usage_of_engine(engine: EngineKey) -> UsageClass {
    match engine {
        EngineKey::Tpb(EngineType::Pe) => UsageClass::InstrPe,
        EngineKey::Tpb(EngineType::Act) => UsageClass::InstrAct,
        EngineKey::Tpb(EngineType::Pool) => UsageClass::InstrPool,
        EngineKey::Tpb(EngineType::Dve) => UsageClass::InstrDve,
        EngineKey::Tpb(EngineType::Sp) => UsageClass::InstrSp,
        // §11.8 publishes no class for Vision-Q7 instructions.
        EngineKey::Q7 => UsageClass::Generic,
    }
}

/// A payload a definition of the chain names, as [`Index::payload_refs`] finds it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PayloadRef {
    /// The row of [`REFS`] that names it.
    pub row: &'static Row,
    /// The name as written, relative to the subgraph directory (in the arena).
    pub name: Span,
    /// The naming entry's index in its array ([`NO_INDEX`]: none).
    pub index: u16,
    /// The naming manifest's record.
    pub by: ManifestRec,
    /// The engine whose JSON names it (or whose engine names the activation set naming it).
    pub engine: Option<EngineKey>,
    /// A weight: its file variable (position and record).
    pub var: Option<(u32, FileVarRec)>,
}

impl PayloadRef {
    /// The usage class it is placed with.
    pub fn usage(&self) -> UsageClass {
        match self.row.names {
            Names::Payload(Some(usage)) => usage,
            _ => self.engine.map_or(UsageClass::Generic, usage_of_engine),
        }
    }
}

/// The usage classes by their `u8` code in a [`PayloadRec`] (their index in
/// [`USAGE_CLASSES`](crate::hal::USAGE_CLASSES)).
pub(crate) fn usage_code(u: UsageClass) -> u8 {
    crate::hal::usage_index(u) as u8
}

/// The inverse of [`usage_code`].
pub(crate) fn usage_of_code(c: u8) -> UsageClass {
    crate::hal::USAGE_CLASSES.get(usize::from(c)).copied().unwrap_or(UsageClass::Generic)
}

/// The lists of the index (their heads; the records live in the arena).
#[derive(Debug, Default)]
pub(crate) struct Index {
    pub manifests: List<ManifestRec>,
    pub def_exts: DefExts,
    pub graphs: List<GraphRec>,
    pub kelf_names: List<KelfNameRec>,
    /// The `file` variables of the definition being read, until it gets its [`DefExt`].
    pub reading_vars: List<FileVarRec>,
    pub names: List<NameRec>,
    /// The payloads that are not weights landed in their variable, in tar order.
    pub payloads: List<PayloadRec>,
    /// Slots of payload records that left [`Index::payloads`] for good.
    pub free_payloads: FreeSlots,
    /// The table of [`Index::payloads`] by member path (past [`TABLE_MIN`] of them), and
    /// its slots taken (records and the gone).
    payload_table: Table,
    payload_used: u32,
    /// Where the payloads' landings are kept.
    pub landings: Landings,
    /// DMA references read before the definition they name into.
    pub pending: Pending,
    /// The definition being read: its names' table did not fit the arena (what it needed).
    pub names_full: Option<ErrorKind>,
    /// Members read as the kind their name suggests, waiting for the chain to name them.
    pub replays: List<ReplayRec>,
    /// The `neff.json` read (its manifest record), if any.
    pub neff: Option<u32>,
}

/// Slots of records that left their list for good, linked through their link word: the next
/// record of the list takes one before the arena grows. (A replaced copy of a member, or the
/// staged copy of a member read both ways that the chain named as a manifest, is never read
/// again.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FreeSlots(u32);

impl Default for FreeSlots {
    fn default() -> Self {
        Self(NIL)
    }
}

/// Records of one list past this many are found by name through a [`Table`]; below it, a scan
/// of the list costs less than a table's arena (a controller's NEFFs stay below it: their
/// arena is what it was).
pub(crate) const TABLE_MIN: u32 = 256;

/// Whether this build keeps [`Table`]s (feature `name-tables`, which hosts build with). A
/// controller's image leaves them out (2.3 KB of flash on a Cortex-M4) and scans its lists: its
/// models have hundreds of weights, not thousands.
const TABLES: bool = cfg!(feature = "name-tables");

/// A slot of a [`Table`] whose record left: probes pass it, as they would a record.
const GONE: u32 = NIL - 1;

/// An open-addressing table of record positions by name, in the arena: `2^log2` slots from
/// `at` ([`NIL`]: no table), probed one after the other from the name's hash. A slot holds its
/// position inverted (`!pos`), so the zeros of a fresh allocation are empty slots ([`NIL`]).
///
/// Lookups by name probe a few slots instead of scanning a list: a member per weight must not
/// cost a scan of every weight (12,000 weights were 72 million record reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Table {
    /// The slots' position.
    pub at: u32,
    /// Slots, as a base-2 logarithm.
    pub log2: u8,
}

impl Default for Table {
    fn default() -> Self {
        Self::NONE
    }
}

impl Table {
    /// No table.
    pub const NONE: Table = Table { at: NIL, log2: 0 };

    /// Empty slots for `count` records, at most two thirds full, at the bottom of the arena.
    fn new(arena: &mut Arena<'_>, count: u32) -> Result<Self, ErrorKind> {
        let want = count.saturating_add(count >> 1);
        // At most 2^32 slots: `want` is a `u32`.
        let log2 = (u32::BITS.saturating_sub(want.leading_zeros())) as u8;
        let at = arena.alloc(4usize.checked_shl(u32::from(log2)).unwrap_or(usize::MAX))?;
        Ok(Table { at, log2 })
    }

    /// Slots in all.
    fn slots(self) -> u32 {
        1u32.checked_shl(u32::from(self.log2)).unwrap_or(u32::MAX)
    }

    /// Where slot `i` (modulo the slots) is.
    fn slot_at(self, i: u32) -> u32 {
        self.at.saturating_add((i & self.slots().wrapping_sub(1)).saturating_mul(4))
    }

    /// The positions on the probe of `hash`, in order, to the first empty slot, until `f`
    /// says stop (true): the slot where it did.
    fn probe(self, arena: &Arena<'_>, hash: u64, f: &mut dyn FnMut(u32) -> bool) -> Option<u32> {
        if self.at == NIL {
            return None;
        }
        let start = hash as u32;
        for i in 0..self.slots() {
            let slot = start.wrapping_add(i);
            let pos = !arena.u32_at(self.slot_at(slot));
            if pos == NIL {
                break;
            }
            if pos != GONE && f(pos) {
                return Some(slot);
            }
        }
        None
    }

    /// Puts `pos` in the first empty slot of the probe of `hash` (a table is never full: it
    /// is built for its records, and grows before it passes three quarters).
    fn insert(self, arena: &mut Arena<'_>, hash: u64, pos: u32) {
        let start = hash as u32;
        for i in 0..self.slots() {
            let at = self.slot_at(start.wrapping_add(i));
            if arena.u32_at(at) == 0 {
                arena.write(at, &(!pos).to_le_bytes());
                return;
            }
        }
    }
}

/// The key of a name in a [`Table`].
fn name_hash(name: &[u8]) -> u64 {
    crate::digest::digest64(name)
}

/// The [`Table`] of a definition's file variables by file name, for one of [`TABLE_MIN`] or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct VarTable {
    /// The definition's manifest record.
    pub def: u32,
    pub table: Table,
}

impl Record for VarTable {
    const SIZE: usize = 4 + 4 + 1;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).u32(self.def).u32(self.table.at).u8(self.table.log2);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        VarTable { def: r.u32(), table: Table { at: r.u32(), log2: r.u8() } }
    }
}

/// The definitions' extensions, in the order they were read: a [`List`] whose
/// [`DefExts::push`] also files the `file` variables of a definition with many in a
/// [`Table`] of their own, so that a member finds its variable without a scan.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct DefExts {
    list: List<DefExt>,
    tables: List<VarTable>,
}

impl core::ops::Deref for DefExts {
    type Target = List<DefExt>;
    fn deref(&self) -> &List<DefExt> {
        &self.list
    }
}

impl DefExts {
    /// Appends `ext`; with [`TABLE_MIN`] variables or more, their table first.
    pub fn push(&mut self, arena: &mut Arena<'_>, ext: &DefExt) -> Result<u32, ErrorKind> {
        if TABLES && ext.vars.len() >= TABLE_MIN {
            let table = Table::new(arena, ext.vars.len())?;
            let mut at = ext.vars.first();
            for _ in 0..ext.vars.len() {
                if at == NIL {
                    break;
                }
                table.insert(arena, name_hash(arena.bytes(ext.vars.get(arena, at).file)), at);
                at = List::<FileVarRec>::next_after(arena, at);
            }
            self.tables.push(arena, &VarTable { def: ext.def, table })?;
        }
        self.list.push(arena, ext)
    }

    /// The table of the definition at `def`, if it has one.
    fn table_of(&self, arena: &Arena<'_>, def: u32) -> Option<Table> {
        self.tables.iter(arena).find(|(_, t)| t.def == def).map(|(_, t)| t.table)
    }
}

/// The state a file variable is looked up in ([`Index::var_named`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VarState {
    /// Whatever became of it.
    Any,
    /// Its member streamed in ([`FileVarRec::has_landed`]).
    Landed,
    /// Its member streamed in and holds its place ([`FileVarRec::is_kept`]).
    Kept,
}

impl VarState {
    /// Whether `v` is in this state.
    fn holds(self, v: &FileVarRec) -> bool {
        match self {
            VarState::Any => true,
            VarState::Landed => v.has_landed(),
            VarState::Kept => v.is_kept(),
        }
    }
}

/// The file named by `path` relative to directory `dir` (`path` itself when `dir` is empty),
/// if `path` is under `dir`.
fn under<'p>(path: &'p [u8], dir: &[u8]) -> Option<&'p [u8]> {
    if dir.is_empty() {
        return Some(path);
    }
    path.strip_prefix(dir).and_then(|rest| rest.strip_prefix(b"/"))
}

/// `dir/name` compared with `path`, without building it.
pub(crate) fn is_joined(path: &str, dir: &str, name: &str) -> bool {
    is_joined_bytes(path.as_bytes(), dir.as_bytes(), name.as_bytes())
}

/// Whether `path` is `dir/name` (`name` itself when `dir` is empty), compared as bytes without
/// building the joined name: the lookups that compare a member with every name of a list take
/// the names straight from the arena, without the UTF-8 check of [`Arena::str`].
// Not inlined: one copy for the dozen lookups that call it.
#[inline(never)]
pub fn is_joined_bytes(path: &[u8], dir: &[u8], name: &[u8]) -> bool {
    if dir.is_empty() {
        return path == name;
    }
    // A host compares the lengths first: most names a member is compared with are not its
    // own, and most differ from it in length (two byte compares fewer per name). A
    // controller keeps its flash.
    if TABLES && path.len() != dir.len().saturating_add(1).saturating_add(name.len()) {
        return false;
    }
    path.strip_prefix(dir).and_then(|rest| rest.strip_prefix(b"/")).is_some_and(|rest| rest == name)
}

/// `dir/name` + `suffix` compared with `path`.
pub(crate) fn is_joined_suffixed(path: &str, dir: &str, name: &str, suffix: &str) -> bool {
    path.strip_suffix(suffix).is_some_and(|stem| is_joined(stem, dir, name))
}

/// The KELFs a NEFF without `neff.json` is loaded by, the first present wins (docs/format.md
/// §5.2: `kelf-0.json`, else `kelf-a.json`).
pub const KELF_FALLBACK_NAMES: [&str; 2] = ["kelf-0.json", "kelf-a.json"];

/// The directory of a member path (`sg00/def.json` -> `sg00`, `neff.json` -> ``).
// Not inlined: called from twenty places.
#[inline(never)]
pub fn dir_of(path: &str) -> &str {
    // A `/` is one byte of UTF-8, so the cut is on a character boundary.
    path.get(..dir_of_bytes(path.as_bytes()).len()).unwrap_or("")
}

/// [`dir_of`] on bytes, for the scans that take names straight from the arena.
// By bytes: `str::rfind`'s searcher carries a bounds check the compiler keeps.
#[inline(never)]
pub fn dir_of_bytes(path: &[u8]) -> &[u8] {
    path.iter().rposition(|&b| b == b'/').and_then(|i| path.get(..i)).unwrap_or(&[])
}

impl Index {
    /// The current (not superseded) manifest record of `member`.
    pub fn manifest(&self, arena: &Arena<'_>, member: &str) -> Option<(u32, ManifestRec)> {
        self.manifests.iter(arena).filter(|(_, m)| !m.superseded && arena.eq(m.member, member)).last()
    }

    /// Marks an earlier copy of `member` as replaced.
    ///
    /// The record leaves the list (lookups, which scan it, stay as short as the archive has
    /// distinct members, however many copies it holds) but keeps its place: records naming it
    /// by position still read it, marked superseded. The graphs, names and waiting file
    /// variables it gave leave their lists too.
    pub fn supersede_manifest(&mut self, arena: &mut Arena<'_>, member: &str) -> bool {
        let found = self.manifest(arena, member);
        if let Some((pos, mut rec)) = found {
            rec.superseded = true;
            self.manifests.set(arena, pos, &rec);
            self.manifests.unlink(arena, pos);
            // What it named goes with it, but for weights that landed: they are reported.
            self.graphs.retain(arena, |g| g.kelf != pos);
            self.names.retain(arena, |n| n.by != pos);
            if rec.ext != NIL {
                let mut ext = self.def_exts.get(arena, rec.ext);
                ext.vars.retain(arena, |v| v.has_landed());
                self.def_exts.set(arena, rec.ext, &ext);
            }
            // Its pending DMA references are let go when their definition settles them
            // (`Loader::settle_dma_names` skips a superseded member's).
            true
        } else {
            false
        }
    }

    /// Appends a payload record, in the slot of one that left for good if there is one. Past
    /// [`TABLE_MIN`] records, they are filed by member path: the table is built (again, twice
    /// as large as the records then, the old one left behind) before the record is kept, so
    /// that a full arena leaves no record the table misses.
    pub fn push_payload(&mut self, arena: &mut Arena<'_>, rec: &PayloadRec) -> Result<u32, ErrorKind> {
        let live = self.payloads.len().saturating_add(1);
        let table = self.payload_table;
        let crowded = u64::from(self.payload_used.saturating_add(1)).saturating_mul(4)
            > u64::from(table.slots()).saturating_mul(3);
        if TABLES && live >= TABLE_MIN && (table.at == NIL || crowded) {
            self.payload_table = Table::new(arena, live.saturating_mul(2))?;
            self.payload_used = 0;
            let mut at = self.payloads.first();
            for _ in 0..self.payloads.len() {
                if at == NIL {
                    break;
                }
                self.file_payload(arena, at);
                at = List::<PayloadRec>::next_after(arena, at);
            }
        }
        let at = self.free_payloads.0;
        let at = if at == NIL {
            self.payloads.push(arena, rec)?
        } else {
            self.free_payloads.0 = List::<PayloadRec>::next_after(arena, at);
            self.payloads.relink(arena, at, rec);
            at
        };
        self.file_payload(arena, at);
        Ok(at)
    }

    /// Files the payload record at `pos` in the table, if there is one.
    fn file_payload(&mut self, arena: &mut Arena<'_>, pos: u32) {
        if TABLES && self.payload_table.at != NIL {
            let hash = name_hash(arena.bytes(self.payloads.get(arena, pos).member));
            self.payload_table.insert(arena, hash, pos);
            self.payload_used = self.payload_used.saturating_add(1);
        }
    }

    /// The payload record of member `name`, if one is in the list. There is at most one: a
    /// copy lands only once the earlier one left ([`Book::release_earlier`](super::book::Book)).
    pub fn payload_named(&self, arena: &Arena<'_>, name: &str) -> Option<(u32, PayloadRec)> {
        let table = self.payload_table;
        if !TABLES || table.at == NIL {
            return self.payloads.iter(arena).filter(|(_, p)| arena.eq(p.member, name)).last();
        }
        let mut found = None;
        table.probe(arena, name_hash(name.as_bytes()), &mut |pos| {
            let p = self.payloads.get(arena, pos);
            found = Some((pos, p)).filter(|_| arena.eq(p.member, name));
            found.is_some()
        });
        found
    }

    /// Takes the payload record at `pos` out of the list for good: nothing reads it again, and
    /// its slot serves the next payload.
    pub fn drop_payload(&mut self, arena: &mut Arena<'_>, pos: u32) {
        // Out of the table first: the slot's next record has another name.
        let table = self.payload_table;
        if TABLES && table.at != NIL {
            let hash = name_hash(arena.bytes(self.payloads.get(arena, pos).member));
            if let Some(slot) = table.probe(arena, hash, &mut |at| at == pos) {
                arena.write(table.slot_at(slot), &(!GONE).to_le_bytes());
            }
        }
        if self.payloads.unlink(arena, pos) {
            arena.write(pos, &self.free_payloads.0.to_le_bytes());
            self.free_payloads.0 = pos;
        }
    }

    /// The file variable at `pos`.
    pub fn var(&self, arena: &Arena<'_>, pos: u32) -> FileVarRec {
        self.reading_vars.get(arena, pos)
    }

    /// Overwrites the file variable at `pos` (any [`List`] of them writes any of its records).
    pub fn set_var(&self, arena: &mut Arena<'_>, pos: u32, var: &FileVarRec) {
        self.reading_vars.set(arena, pos, var);
    }

    /// The first file variable, of every definition read (those a replaced definition named
    /// that landed included) in declaration order, that `f` says yes to: `(definition's
    /// extension position, extension, variable position, variable)`. A visit of every one
    /// when `f` never does (one copy of the loop, whatever the caller wants of it).
    pub fn find_var(
        &self,
        arena: &Arena<'_>,
        f: &mut dyn FnMut(&DefExt, &FileVarRec) -> bool,
    ) -> Option<(u32, DefExt, u32, FileVarRec)> {
        self.def_exts
            .iter(arena)
            .find_map(|(at, ext)| ext.vars.iter(arena).find(|(_, v)| f(&ext, v)).map(|(pos, v)| (at, ext, pos, v)))
    }

    /// The first variable of `ext`, in declaration order, with file name `file` in state `state`:
    /// through its definition's table if it has one, else by a scan.
    fn var_in(&self, arena: &Arena<'_>, ext: &DefExt, file: &[u8], state: VarState) -> Option<(u32, FileVarRec)> {
        let named = |v: &FileVarRec| arena.bytes(v.file) == file && state.holds(v);
        let table = if TABLES { self.def_exts.table_of(arena, ext.def) } else { None };
        let Some(table) = table else {
            return ext.vars.iter(arena).find(|(_, v)| named(v));
        };
        // Every variable of that name is on the probe; the first declared is the lowest placed.
        let mut found: Option<(u32, FileVarRec)> = None;
        table.probe(arena, name_hash(file), &mut |pos| {
            let v = self.var(arena, pos);
            if found.is_none_or(|(first, _)| pos < first) && named(&v) {
                found = Some((pos, v));
            }
            false
        });
        found
    }

    /// [`Index::find_var`] for the variables that name member `member` (the definition's
    /// directory joined with the file name): the first, of every definition read in order,
    /// in state `state`. A chain walked per definition, not a scan of the variables.
    pub fn var_named(
        &self,
        arena: &Arena<'_>,
        member: &str,
        state: VarState,
    ) -> Option<(u32, DefExt, u32, FileVarRec)> {
        if !TABLES {
            // The scan of every variable, through the one copy of its loop (flash).
            return self.find_var(arena, &mut |ext, v| {
                // By bytes, and the definition's record is read only for a file name that ends
                // the member's.
                let file = arena.bytes(v.file);
                member.as_bytes().ends_with(file)
                    && {
                        let def = self.manifests.get(arena, ext.def);
                        is_joined_bytes(member.as_bytes(), dir_of_bytes(arena.bytes(def.member)), file)
                    }
                    && state.holds(v)
            });
        }
        self.def_exts.iter(arena).find_map(|(at, ext)| {
            let def = self.manifests.get(arena, ext.def);
            let file = under(member.as_bytes(), dir_of_bytes(arena.bytes(def.member)))?;
            self.var_in(arena, &ext, file, state).map(|(pos, v)| (at, ext, pos, v))
        })
    }

    /// The KELF records of the chain, in `neff.json` node order (which numbers the cores):
    /// the members `neff.json` names with the selected mark. Without `neff.json` (read so far),
    /// a lone KELF is taken as the chain, or `fallback` when given.
    pub fn chain_kelfs<'s>(
        &'s self,
        arena: &'s Arena<'_>,
        mark: Option<KelfMark>,
        fallback: Option<u32>,
    ) -> impl Iterator<Item = (u32, ManifestRec)> + 's {
        let kelfs = || self.manifests.iter(arena).filter(|(_, m)| m.kind == ManifestKind::Kelf && !m.superseded);
        let lone = if self.neff.is_none() {
            match fallback {
                Some(pos) => Some(pos),
                None => {
                    let mut it = kelfs();
                    match (it.next(), it.next()) {
                        (Some((pos, _)), None) => Some(pos),
                        _ => None,
                    }
                }
            }
        } else {
            None
        };
        let lone = lone.map(|pos| (pos, self.manifests.get(arena, pos)));
        let named =
            self.kelf_names.iter(arena).filter(move |(_, k)| self.neff.is_some() && Some(k.mark) == mark).filter_map(
                move |(_, k)| self.manifest(arena, arena.str(k.name)).filter(|(_, m)| m.kind == ManifestKind::Kelf),
            );
        lone.into_iter().chain(named)
    }

    /// The chain's graphs in core order: `(core, graph)`.
    pub fn chain_graphs<'s>(
        &'s self,
        arena: &'s Arena<'_>,
        mark: Option<KelfMark>,
        fallback: Option<u32>,
    ) -> impl Iterator<Item = (u8, GraphRec)> + 's {
        self.chain_kelfs(arena, mark, fallback)
            .flat_map(move |(pos, _)| self.graphs.iter(arena).filter(move |(_, g)| g.kelf == pos).map(|(_, g)| g))
            .enumerate()
            .map(|(i, g)| (u8::try_from(i).unwrap_or(u8::MAX), g))
    }

    /// The `def.json` record at member path `path`.
    pub fn def(&self, arena: &Arena<'_>, path: &str) -> Option<(u32, ManifestRec)> {
        self.manifest(arena, path).filter(|(_, m)| m.kind == ManifestKind::Def)
    }

    /// The kept names of the latest definition read in directory `dir`, if it kept them.
    pub fn dir_names(&self, arena: &Arena<'_>, dir: &str) -> Option<NameTable> {
        let (_, def) = self
            .manifests
            .iter(arena)
            .filter(|(_, m)| !m.superseded && m.kind == ManifestKind::Def && dir_of(arena.str(m.member)) == dir)
            .last()?;
        self.def_ext(arena, &def).names
    }

    /// What a def record keeps besides the record (all empty for another kind).
    #[inline(never)]
    pub fn def_ext(&self, arena: &Arena<'_>, def: &ManifestRec) -> DefExt {
        if def.ext == NIL {
            DefExt::default()
        } else {
            self.def_exts.get(arena, def.ext)
        }
    }

    /// The current engine JSON records, as `(position, record)`.
    fn engine_jsons<'s>(&'s self, arena: &'s Arena<'_>) -> impl Iterator<Item = (u32, ManifestRec)> + 's {
        self.manifests.iter(arena).filter(|(_, m)| !m.superseded && m.kind == ManifestKind::Engine)
    }

    /// The engine JSON an engine of the def at `def` names, as `(member record, record)`.
    pub fn engine_of(&self, arena: &Arena<'_>, def: &ManifestRec, engine: EngineKey) -> Option<(u32, ManifestRec)> {
        let name = arena.str(*self.def_ext(arena, def).engines.get(engine.slot())?);
        if name.is_empty() {
            return None;
        }
        let dir = dir_of(arena.str(def.member));
        self.engine_jsons(arena)
            .filter(|(_, m)| is_joined_bytes(arena.bytes(m.member), dir.as_bytes(), name.as_bytes()))
            .last()
    }

    /// [`Self::engine_of`] of every engine slot, in [`ENGINE_KEYS`] order, from one scan of
    /// the manifests.
    pub fn engines_of(&self, arena: &Arena<'_>, def: &ManifestRec) -> [Option<(u32, ManifestRec)>; ENGINE_SLOTS] {
        let names = self.def_ext(arena, def).engines;
        let dir = dir_of(arena.str(def.member));
        let mut found = [None; ENGINE_SLOTS];
        if names.iter().all(|name| name.len == 0) {
            return found;
        }
        for (pos, m) in self.engine_jsons(arena) {
            let member = arena.bytes(m.member);
            for (json, name) in found.iter_mut().zip(&names) {
                // The last that matches, as `engine_of` takes.
                if name.len != 0 && is_joined_bytes(member, dir.as_bytes(), arena.bytes(*name)) {
                    *json = Some((pos, m));
                }
            }
        }
        found
    }

    /// The instruction stream an engine runs: the engine JSON's `instr`, else `<eng>_instr`.
    pub fn instr_of(
        &self,
        arena: &Arena<'_>,
        def: &ManifestRec,
        json: Option<&ManifestRec>,
        engine: EngineKey,
    ) -> Option<Span> {
        match json {
            Some(j) if j.has_instr => Some(j.instr),
            _ => self.def_ext(arena, def).engine_instrs.get(engine.slot()).copied().filter(|s| s.len != 0),
        }
    }

    /// The directories of the definitions read so far that name `engine_json` as an engine.
    pub fn def_dirs_of<'s>(&'s self, arena: &'s Arena<'_>, engine_json: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.manifests.iter(arena).filter(|(_, m)| !m.superseded && m.kind == ManifestKind::Def).filter_map(
            move |(_, d)| {
                let dir = dir_of(arena.str(d.member));
                let names = self.def_ext(arena, &d).engines;
                names
                    .iter()
                    .any(|s| s.len != 0 && is_joined_bytes(engine_json.as_bytes(), dir.as_bytes(), arena.bytes(*s)))
                    .then_some(dir)
            },
        )
    }

    /// Calls `f` with each payload a chain definition names, walking the table from the
    /// definition at `def_pos` down (its own keys, each engine JSON's in `ENGINE_KEYS` order,
    /// each activation set's under its engine), in table order within a manifest, until `f`
    /// answers `Some`. A manifest that failed to read names nothing; neither does an engine
    /// JSON or activation set not read (yet).
    ///
    /// Placement and the binder's reference check both ask it: what gives a payload its role
    /// is what the binder requires present.
    ///
    /// `want`: only the references that may name that member are asked about (a weight's are
    /// found by the file name's hash chain, not by a walk of every variable).
    pub fn payload_refs<'a, T>(
        &self,
        arena: &'a Arena<'_>,
        def_pos: u32,
        def: &ManifestRec,
        want: Option<&str>,
        f: &mut dyn FnMut(&PayloadRef) -> Option<T>,
    ) -> Option<T> {
        // One copy of the walk whatever `f` answers (flash on a controller).
        let mut answer = None;
        // A host asking about one member that no name but a `file` variable may be (a
        // weight, asked of each of thousands) skips the walk of the engines before them.
        let mut asked = |r: &PayloadRef| {
            answer = f(r);
            answer.is_some()
        };
        let ext = want.filter(|_| TABLES).map(|member| (member, self.def_ext(arena, def)));
        match ext {
            Some((member, ext)) if !self.named_but_by_vars(arena, def, &ext, member) => {
                let (dir, by) = (dir_of(arena.str(def.member)), (def_pos, *def));
                REFS.iter()
                    .filter(|row| row.store == Store::FileVars && row.by.covers(Tier::Def))
                    .any(|row| self.file_var_refs(arena, row, dir, by, &ext, want, &mut asked))
            }
            _ => self.refs_under(arena, Tier::Def, def, (def_pos, *def), None, want, &mut asked),
        };
        answer
    }

    /// Whether a reference under definition `def` other than its `file` variables may name
    /// `member`: a name a manifest gave ([`Store::Names`], of any manifest and kind) or an
    /// instruction stream (any engine JSON's `instr`, the definition's `<eng>_instr`). The
    /// rows of [`REFS`] walked before the variables (the engine slots) name nothing else, so
    /// when none may, the variables give the answer the walk would.
    /// (`ext`: the definition's extra record.)
    fn named_but_by_vars(&self, arena: &Arena<'_>, def: &ManifestRec, ext: &DefExt, member: &str) -> bool {
        let dir = dir_of_bytes(arena.bytes(def.member));
        let named = |name: Span| name.len != 0 && is_joined_bytes(member.as_bytes(), dir, arena.bytes(name));
        self.names.iter(arena).any(|(_, n)| named(n.name))
            || ext.engine_instrs.iter().any(|instr| named(*instr))
            || self.engine_jsons(arena).any(|(_, json)| json.has_instr && named(json.instr))
    }

    /// The references of [`Store::FileVars`] row `row` of definition `by` (in the directory
    /// `dir`, with extra record `ext`), until `f` answers true (then true): with `want` on a
    /// host, only the first variable naming that member.
    #[allow(clippy::too_many_arguments)] // the row and its definition's place, then what it asks
    fn file_var_refs(
        &self,
        arena: &Arena<'_>,
        row: &'static Row,
        dir: &str,
        by: (u32, ManifestRec),
        ext: &DefExt,
        want: Option<&str>,
        f: &mut dyn FnMut(&PayloadRef) -> bool,
    ) -> bool {
        let mut asked = |(pos, v): (u32, FileVarRec)| {
            f(&PayloadRef { row, name: v.file, index: NO_INDEX, by: by.1, engine: None, var: Some((pos, v)) })
        };
        // Without tables the scan is the lookup: one loop, not two (flash).
        match want.filter(|_| TABLES) {
            // Only the first variable of that name: the one `f` would be asked first.
            Some(member) => under(member.as_bytes(), dir.as_bytes())
                .and_then(|file| self.var_in(arena, ext, file, VarState::Any))
                .is_some_and(asked),
            None => ext.vars.iter(arena).any(&mut asked),
        }
    }

    /// [`Self::payload_refs`] from manifest `by` of `tier` (`engine`: the engine it stands
    /// under), until `f` answers true (then true).
    #[allow(clippy::too_many_arguments)] // the walk's place (tier, definition, manifest, engine), then what it asks
    fn refs_under<'a>(
        &self,
        arena: &'a Arena<'_>,
        tier: Tier,
        def: &ManifestRec,
        by: (u32, ManifestRec),
        engine: Option<EngineKey>,
        want: Option<&str>,
        f: &mut dyn FnMut(&PayloadRef) -> bool,
    ) -> bool {
        let dir = dir_of(arena.str(def.member));
        for row in &REFS {
            if !row.by.covers(tier) {
                continue;
            }
            let payload = |(name, index), var| PayloadRef { row, name, index, by: by.1, engine, var };
            let found = match (row.store, row.names) {
                // A definition's variables (rows of its tier only: no engine stands above).
                (Store::FileVars, _) => self.file_var_refs(arena, row, dir, by, &self.def_ext(arena, &by.1), want, f),
                (Store::Instr, _) => engine
                    .and_then(|e| self.instr_of(arena, def, Some(&by.1), e))
                    .is_some_and(|instr| f(&payload((instr, NO_INDEX), None))),
                (Store::EngineSlots, _) => {
                    // A host finds the six engine JSONs in one scan of the manifests (a
                    // weight's role is asked of each member: 6 x 3,000 scans for 3,000
                    // weights); a controller, one scan per engine as it needs it (no
                    // six-record array on its stack).
                    let all = TABLES.then(|| self.engines_of(arena, &by.1));
                    ENGINE_KEYS.into_iter().any(|e| {
                        let json = match &all {
                            Some(all) => all.get(e.slot()).copied().flatten(),
                            None => self.engine_of(arena, &by.1, e),
                        };
                        json.filter(|(_, j)| j.failed.is_none()).is_some_and(|json| {
                            self.refs_under(arena, Tier::Engine(Some(e)), def, json, Some(e), want, f)
                        })
                    })
                }
                (Store::Names, Names::Payload(_)) => {
                    self.names_by(arena, by.0, row.kind).any(|name| f(&payload(name, None)))
                }
                (Store::Names, Names::Manifest(next)) => self.names_by(arena, by.0, row.kind).any(|(name, _)| {
                    let name = arena.str(name);
                    self.engine_jsons(arena)
                        .filter(|(_, m)| m.failed.is_none())
                        .find(|(_, m)| is_joined_suffixed(arena.str(m.member), dir, name, row.suffix))
                        .is_some_and(|named| self.refs_under(arena, next, def, named, engine, want, f))
                }),
                (Store::KelfNames | Store::Graphs, _) => false,
            };
            if found {
                return true;
            }
        }
        false
    }

    /// The names of `kind` that the manifest at `by` gives ([`Store::Names`]).
    pub fn names_by<'s>(
        &'s self,
        arena: &'s Arena<'_>,
        by: u32,
        kind: RefKind,
    ) -> impl Iterator<Item = (Span, u16)> + 's {
        self.names.iter(arena).filter(move |(_, n)| n.by == by && n.kind == kind).map(|(_, n)| (n.name, n.index))
    }

    /// Whether any manifest read so far names `member` as a manifest, and as what.
    pub fn named_as(&self, arena: &Arena<'_>, member: &str) -> Option<ManifestKind> {
        if self.kelf_names.iter(arena).any(|(_, k)| arena.eq(k.name, member)) {
            return Some(ManifestKind::Kelf);
        }
        if self.graphs.iter(arena).any(|(_, g)| arena.eq(g.definition, member)) {
            return Some(ManifestKind::Def);
        }
        let by_def =
            self.manifests.iter(arena).filter(|(_, m)| !m.superseded && m.kind == ManifestKind::Def).any(|(_, m)| {
                let dir = dir_of_bytes(arena.bytes(m.member));
                let engines = self.def_ext(arena, &m).engines;
                engines.iter().any(|s| s.len != 0 && is_joined_bytes(member.as_bytes(), dir, arena.bytes(*s)))
            });
        // A manifest a name of the table names (§8.3, §7.6): an activation set `S` is member
        // `S.json` of the subgraph directory, the directory of the definition naming the
        // engine JSON that lists it (which need not be the engine JSON's own: `"act":
        // "e/Activation.json"`); the libraries' manifest is a member of its definition's.
        let by_name = self.names.iter(arena).any(|(_, n)| {
            let suffix = match n.kind {
                RefKind::ActSet => ".json",
                RefKind::UcodeLibJson => "",
                _ => return false,
            };
            // Whatever directory it joins, the member's stem ends with the name: a test that
            // needs no scan, before the scans of the definitions (a lookup per member must not
            // cost names x manifests).
            let name = arena.str(n.name);
            let Some(stem) = member.strip_suffix(suffix).filter(|stem| stem.ends_with(name)) else {
                return false;
            };
            let by = self.manifests.get(arena, n.by);
            let by_member = arena.str(by.member);
            !by.superseded
                && if by.kind == ManifestKind::Def {
                    is_joined(stem, dir_of(by_member), name)
                } else {
                    self.def_dirs_of(arena, by_member).any(|dir| is_joined(stem, dir, name))
                }
        });
        if by_def || by_name {
            return Some(ManifestKind::Engine);
        }
        None
    }

    /// Manifests read as another kind than the chain names them as: members read before the
    /// manifest naming them, whose bytes the replay store did not hold for a second reading
    /// (a member it held is read again and superseded). After a load, or where it stopped:
    /// a load lent a store that held them all would have gone as this one up to the first.
    /// Hosts only: a controller's flash has no room for the scan (`Needs::replay_missed`).
    #[cfg(not(target_os = "none"))]
    pub fn read_as_other(&self, arena: &Arena<'_>) -> u32 {
        let mut count = 0u32;
        for (_, m) in self.manifests.iter(arena) {
            if !m.superseded && self.named_as(arena, arena.str(m.member)).is_some_and(|k| k != m.kind) {
                count = count.saturating_add(1);
            }
        }
        count
    }
}

/// A payload's role, once the manifests have given it one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Role {
    pub usage: UsageClass,
    pub align: u64,
    pub core: u8,
    /// A `file` variable's declared size, checked against what lands.
    pub expect_len: Option<u64>,
    /// An instruction stream (size checks apply).
    pub instr: bool,
    /// A weight: the file variable's record, which keeps the landing.
    pub var: Option<u32>,
}

impl Role {
    /// The role reference `r` gives, on `core`.
    fn of(r: &PayloadRef, core: u8) -> Self {
        Role {
            usage: r.usage(),
            align: r.var.map_or(INSTR_ALIGN, |(_, v)| v.align()),
            core,
            expect_len: r.var.and_then(|(_, v)| v.size),
            instr: r.row.kind == RefKind::Instr,
            var: r.var.map(|(pos, _)| pos),
        }
    }
}

impl Index {
    /// The role the chain read so far gives `member`, if it gives it one: a def reached from
    /// the chain's KELFs (`mark` and `fallback` as [`Index::chain_kelfs`] takes them: before
    /// `neff.json` is read, a lone KELF stands for the chain) names it, by the first of its
    /// references ([`Index::payload_refs`]) that does. While walking this is a first answer
    /// (the binder moves a payload if the full chain disagrees); when binding, it is the
    /// answer. Placement and the binder both ask it here, below them.
    pub fn role_of(
        &self,
        arena: &Arena<'_>,
        member: &str,
        mark: Option<KelfMark>,
        fallback: Option<u32>,
    ) -> Option<Role> {
        // The chain's graphs whose directory holds the member (by prefix: names in a def.json
        // are relative to its directory and may have directories of their own, `w/x.npy`; a
        // definition at the tar root holds every member, so the next graph is asked too).
        self.chain_graphs(arena, mark, fallback).find_map(|(core, g)| {
            let definition = arena.str(g.definition);
            let dir = dir_of(definition);
            if !dir.is_empty() && !member.strip_prefix(dir).is_some_and(|r| r.starts_with('/')) {
                return None;
            }
            let (def_pos, def) = self.def(arena, definition)?;
            if def.failed.is_some() {
                return None;
            }
            let dir = dir_of(arena.str(def.member));
            self.payload_refs(arena, def_pos, &def, Some(member), &mut |r| {
                is_joined_bytes(member.as_bytes(), dir.as_bytes(), arena.bytes(r.name)).then(|| Role::of(r, core))
            })
        })
    }
}

/// Pushes a string, turning a full arena into an error about `member`.
pub(crate) fn push_str(arena: &mut Arena<'_>, s: &str, stage: crate::Stage, member: &str) -> Result<Span, Error> {
    arena.push_str(s).map_err(|k: ErrorKind| Error::about_member(stage, member, k))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    extern crate std;
    use super::*;
    use crate::loader::PayloadState;

    fn landing(state: PayloadState) -> Landing {
        Landing {
            seq: 70_000,
            state: state.code(),
            usage: usage_code(UsageClass::Weight),
            core: 7,
            region: 123_456,
            len: 5 << 33,
            header_len: 268,
            digest: 0x0123_4567_89ab_cdef,
        }
    }

    /// A host's one scan for a definition's engine JSONs finds what one scan per engine finds.
    #[test]
    fn the_engines_of_a_definition_found_in_one_scan_are_those_found_one_by_one() {
        let mut buf = std::vec![0u8; 1 << 16];
        let mut arena = Arena::new(&mut buf);
        let mut index = Index::default();
        let manifest = |index: &mut Index, arena: &mut Arena<'_>, member: &str, kind: ManifestKind| {
            let rec = ManifestRec::new(arena.push_str(member).unwrap(), kind);
            index.manifests.push(arena, &rec).unwrap()
        };
        // Two definitions; engine JSONs in both directories, one given twice (the last
        // copy counts), one superseded, one a definition's name that is no engine JSON, one
        // at the top and one of a name no definition gives.
        for member in ["sg00/pe.json", "sg01/pe.json", "sg00/act.json", "sg00/act.json", "pe.json", "sg00/other.json"] {
            manifest(&mut index, &mut arena, member, ManifestKind::Engine);
        }
        let gone = manifest(&mut index, &mut arena, "sg00/dve.json", ManifestKind::Engine);
        let mut rec = index.manifests.get(&arena, gone);
        rec.superseded = true;
        index.manifests.set(&mut arena, gone, &rec);
        manifest(&mut index, &mut arena, "sg00/q7.json", ManifestKind::Def);
        let mut defs = std::vec::Vec::new();
        for (member, names) in [
            ("sg00/def.json", ["pe.json", "act.json", "", "dve.json", "q7.json", "pe.json"]),
            ("sg01/def.json", ["", "", "", "", "", ""]),
            ("def.json", ["pe.json", "", "", "", "", "sg00/act.json"]),
        ] {
            let mut ext = DefExt::default();
            for (slot, name) in ext.engines.iter_mut().zip(names) {
                *slot = arena.push_str(name).unwrap();
            }
            let mut def = ManifestRec::new(arena.push_str(member).unwrap(), ManifestKind::Def);
            def.ext = index.def_exts.push(&mut arena, &ext).unwrap();
            index.manifests.push(&mut arena, &def).unwrap();
            defs.push(def);
        }
        let mut found = 0;
        for def in &defs {
            let one_by_one = ENGINE_KEYS.map(|e| index.engine_of(&arena, def, e));
            assert_eq!(index.engines_of(&arena, def), one_by_one, "{}", arena.str(def.member));
            found += one_by_one.iter().flatten().count();
        }
        // sg00: pe, act (its last copy), pe again; the top: pe, act.
        assert_eq!(found, 5);
    }

    /// The directory of a member, by `str` and by bytes: the last `/` splits, none gives the
    /// top directory (empty), and a name beyond ASCII is cut at the same place.
    #[test]
    fn dir_of_and_dir_of_bytes_cut_at_the_last_slash() {
        let cases = [
            ("neff.json", ""),
            ("sg00/def.json", "sg00"),
            ("sg00/x/DVE.json", "sg00/x"),
            ("/a", ""),
            ("a/", "a"),
            ("", ""),
            ("é/ü/w.bin", "é/ü"),
        ];
        for (path, dir) in cases {
            assert_eq!(dir_of(path), dir, "{path}");
            assert_eq!(dir_of_bytes(path.as_bytes()), dir.as_bytes(), "{path}");
        }
    }

    #[test]
    fn a_weight_round_trips_with_its_name_in_its_tail() {
        let mut buf = [0u8; 512];
        let mut arena = Arena::new(&mut buf);
        let mut vars = List::<FileVarRec>::new();
        let declared = FileVarRec::new(12, Some(5 << 33), 15);
        let undeclared = FileVarRec::new(3, None, 0);
        let wide = declared.tail_head().unwrap();
        let a = vars.push_with_tails(&mut arena, &declared, [&wide, b"w00000_n.npy"]).unwrap();
        let b = vars.push_with_tail(&mut arena, &undeclared, b"x.y").unwrap();
        assert_eq!(arena.used(), 2 * (4 + FileVarRec::SIZE) + 8 + 15, "a record, its link and its name: no span");
        // A size below 4 GiB - 1 fits the record; from there up it is the tail's first 8 bytes.
        for (size, in_tail) in
            [(0, false), (u64::from(u32::MAX) - 1, false), (u64::from(u32::MAX), true), (u64::MAX, true)]
        {
            let rec = FileVarRec::new(1, Some(size), 0);
            assert_eq!(rec.tail_head().is_some(), in_tail, "{size}");
            let head = rec.tail_head();
            let mut list = List::<FileVarRec>::new();
            let pos = list.push_with_tails(&mut arena, &rec, [head.as_ref().map_or(&[], |h| h), b"z"]).unwrap();
            let back = list.get(&arena, pos);
            assert_eq!((back.size, arena.str(back.file)), (Some(size), "z"), "{size}");
        }
        let got = vars.get(&arena, a);
        assert_eq!(
            (arena.str(got.file), got.size, got.align(), got.landed, got.is_kept()),
            ("w00000_n.npy", Some(5 << 33), 1 << 15, NIL, false)
        );
        // Landed (a slot) and kept or not, with or without a declared size.
        for (pos, size) in [(a, Some(5 << 33)), (b, None)] {
            for (landed, kept) in [(7, true), (NOTED | 3, false), (NIL - 1, true)] {
                let mut v = vars.get(&arena, pos);
                (v.landed, v.kept) = (landed, kept);
                vars.set(&mut arena, pos, &v);
                let back = vars.get(&arena, pos);
                assert_eq!(back, v, "{landed} {kept}");
                assert_eq!((back.size, back.is_kept()), (size, kept));
            }
        }
        assert_eq!(arena.str(vars.get(&arena, b).file), "x.y");
    }

    /// Landings go to the device's notebook while it has room, then to the arena; each reads
    /// back as written, wherever it is, and a device that cannot read back says so.
    #[test]
    fn landings_fill_the_notebook_then_the_arena() {
        use crate::hal::HalError;
        use crate::sim::SimDevice;
        let mut notebook = [0u8; 2 * Landing::SIZE + 5];
        let mut dev: SimDevice<'_> =
            SimDevice::digest_only(1 << 20, crate::vocab::Arch::Cayman).with_notebook(&mut notebook);
        let mut buf = [0u8; 256];
        let mut arena = Arena::new(&mut buf);
        let mut landings = Landings::new(dev.notebook_len());
        let states = [PayloadState::Placed, PayloadState::Released, PayloadState::Checked, PayloadState::Staged];
        let mut slots = std::vec::Vec::new();
        for (i, state) in states.into_iter().enumerate() {
            let l = Landing { seq: i as u32, ..landing(state) };
            slots.push((landings.keep(&mut dev, &mut arena, &l).unwrap(), l));
        }
        // Two notes fit the notebook (the 5 bytes left over are no slot); two went to the arena.
        assert_eq!(slots.iter().map(|(s, _)| *s).collect::<std::vec::Vec<_>>(), [NOTED, NOTED | 1, 0, 28]);
        assert_eq!((dev.noted_bytes(), arena.used()), (2 * Landing::SIZE, 2 * Landing::SIZE));
        for (slot, l) in &slots {
            assert_eq!(landings.get(&dev, &arena, *slot).unwrap(), *l);
        }
        // Overwritten in place, in either store.
        for (slot, l) in &slots {
            let moved = Landing { region: 9, state: PayloadState::Placed.code(), ..*l };
            landings.set(&mut dev, &mut arena, *slot, &moved).unwrap();
            assert_eq!(landings.get(&dev, &arena, *slot).unwrap(), moved);
        }
        // Slots given back are taken again, last first, before any new one.
        let used = arena.used();
        landings.forget(&mut dev, &mut arena, NOTED | 1).unwrap();
        landings.forget(&mut dev, &mut arena, 0).unwrap();
        let l = landing(PayloadState::Placed);
        assert_eq!(landings.keep(&mut dev, &mut arena, &l), Ok(0));
        assert_eq!(landings.keep(&mut dev, &mut arena, &l), Ok(NOTED | 1));
        assert_eq!(landings.get(&dev, &arena, NOTED | 1).unwrap(), l);
        assert_eq!(arena.used(), used, "no new slot");
        assert_eq!(landings.keep(&mut dev, &mut arena, &l), Ok(56));
        // A notebook slot past what the device lends is the device's error, not a panic.
        let past = NOTED | 2;
        assert!(matches!(landings.get(&dev, &arena, past), Err(ErrorKind::Hal(HalError::OutOfBounds { .. }))));
        // No notebook: the arena only, and a full arena is an error that names it.
        let mut small = [0u8; Landing::SIZE + 3];
        let mut arena = Arena::new(&mut small);
        let mut landings = Landings::new(0);
        assert_eq!(landings.keep(&mut dev, &mut arena, &slots[0].1), Ok(0));
        assert!(matches!(landings.keep(&mut dev, &mut arena, &slots[0].1), Err(ErrorKind::ArenaFull { .. })));
    }

    #[test]
    fn payloads_and_names_round_trip() {
        let mut buf = [0u8; 512];
        let mut arena = Arena::new(&mut buf);
        let member = arena.push_str("sg00/PE.bin").unwrap();
        let mut payloads = List::<PayloadRec>::new();
        for (quiet, failed) in [(false, None), (true, Some(3)), (false, Some(NO_SLOT))] {
            let p = PayloadRec { member, landed: NOTED | 5, kept: failed.is_none(), quiet, failed };
            let pos = payloads.push(&mut arena, &p).unwrap();
            assert_eq!(payloads.get(&arena, pos), p);
        }
        let mut names = List::<NameRec>::new();
        for kind in REFS.iter().map(|r| r.kind) {
            let rec = NameRec { by: 9, kind, name: Span { at: 0, len: 6 }, index: 513 };
            let pos = names.push_with_tail(&mut arena, &rec, b"set0_x").unwrap();
            let back = names.get(&arena, pos);
            assert_eq!((back.by, back.kind, arena.str(back.name), back.index), (9, kind, "set0_x", 513));
        }
    }

    #[test]
    fn named_by_follows_the_keys_the_loader_follows() {
        let act = Tier::Engine(Some(EngineKey::Tpb(EngineType::Act)));
        let pe = Tier::Engine(Some(EngineKey::Tpb(EngineType::Pe)));
        assert_eq!(named_by(Tier::Neff, "nodes[3].attrs.kelf"), Some((Names::Manifest(Tier::Kelf), "")));
        assert_eq!(named_by(Tier::Kelf, "graphs[0].definition"), Some((Names::Manifest(Tier::Def), "")));
        assert_eq!(named_by(Tier::Def, "act"), Some((Names::Manifest(act), "")));
        assert_eq!(named_by(Tier::Def, "pe_instr"), Some((Names::Payload(Some(UsageClass::InstrPe)), "")));
        let weight = Some((Names::Payload(Some(UsageClass::Weight)), ""));
        assert_eq!(named_by(Tier::Def, "var.identity_56_sg0000.file_name"), weight);
        assert_eq!(named_by(Tier::Def, "ucode_lib"), Some((Names::Manifest(Tier::UcodeLibs), "")));
        let lib = Some((Names::Payload(Some(UsageClass::UcodeLib)), ""));
        assert_eq!(named_by(Tier::Def, "ucode_lib[0].library"), lib);
        assert_eq!(named_by(Tier::UcodeLibs, "ucode_lib[7].library"), lib);
        assert_eq!(named_by(pe, "instr"), Some((Names::Payload(None), "")));
        assert_eq!(named_by(act, "activation_function_sets"), Some((Names::Manifest(Tier::ActSet), ".json")));
        let dve = Tier::Engine(Some(EngineKey::Tpb(EngineType::Dve)));
        assert_eq!(named_by(dve, "dve_tables[0].opcode_table"), Some((Names::Payload(Some(UsageClass::Generic)), "")));
        // Keys the loader does not follow, and keys of another tier.
        assert_eq!(named_by(act, "act_info"), None);
        assert_eq!(named_by(pe, "dve_tables[0].opcode_table"), None, "only a DVE engine JSON's tables");
        assert_eq!(named_by(Tier::Kelf, "nodes[0].attrs.kelf"), None);
        assert_eq!(named_by(Tier::Def, "var.x.size"), None);
        assert_eq!(named_by(Tier::Neff, "pe"), None);
    }

    #[test]
    fn the_table_has_a_row_a_kind_and_every_name_a_way_in() {
        for (i, row) in REFS.iter().enumerate() {
            let kind = row.kind;
            assert_eq!(kind as usize, i, "a kind's code is its row's place");
            assert_eq!(RefKind::from_code(i as u8), Some(kind));
            // Names kept as name records are recorded from the manifest's entries or keys;
            // the other stores are filled by their own records.
            assert_eq!(row.store == Store::Names, !matches!(row.source, Source::Other), "{kind:?}");
            // Every key is the schema's (only an engine slot's is the engine's own).
            assert_eq!(row.key.is_empty(), row.store == Store::EngineSlots, "{kind:?}");
            // A manifest is named from the tier above it.
            if let Names::Manifest(tier) = row.names {
                assert_ne!(tier, row.by, "{kind:?}");
            }
        }
        assert_eq!(RefKind::Weight.key_path(NO_INDEX).as_str(), "var.file_name");
        assert_eq!(RefKind::UcodeLib.key_path(7).as_str(), "ucode_lib[7].library");
        assert_eq!(RefKind::Kelf.key_path(2).as_str(), "nodes[2].attrs.kelf");
        assert_eq!(RefKind::Kelf.key_path(NO_INDEX).as_str(), "nodes.attrs.kelf");
        assert_eq!(RefKind::DveTable.key_path(0).as_str(), "dve_tables[0]");
        assert_eq!(RefKind::Definition.key_path(u16::MAX - 1).as_str(), "graphs[65534].definition");
    }
}
