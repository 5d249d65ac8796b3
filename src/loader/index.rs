//! The chain's index: what the manifests read so far name, kept in the caller's arena.
//!
//! Binding must remember a few things per manifest and per payload: which member is which
//! manifest, what each KELF, `def.json` and engine JSON names (graphs, engine JSONs,
//! instruction streams, tables, weights with their sizes and alignments, ucode libraries), and
//! what became of each payload. Everything else a manifest holds streams past. Each of these is
//! a fixed-size [`Record`] in one [`List`] of the [`Arena`]; names are [`Span`]s of it, relative
//! to their subgraph directory as the manifests write them.
//!
//! The index answers two questions: which members the chain reaches from `neff.json` (spec
//! §15.18: the chain, not file names, decides what is read), and what role a payload has.

use super::dma::{DmaRefRec, NameTable};
use crate::arena::{Arena, List, Reader, Record, Span, Writer, NIL};
pub use crate::error::ManifestKind;
use crate::error::{Error, ErrorKind};
use crate::manifest::def::EngineKey;
use crate::manifest::neff::KelfMark;
use crate::manifest::{Arch, UsageClass};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct DefExt {
    /// Engine JSON names, then `<eng>_instr` names, in `ENGINE_KEYS` order (empty: absent).
    pub engines: [Span; ENGINE_SLOTS],
    pub engine_instrs: [Span; ENGINE_SLOTS],
    /// The cayman carveout facts ([`CarveoutFacts`]).
    pub carveouts: CarveoutFacts,
    /// Its queue and variable names, kept when an engine JSON it names was still to come
    /// ([`super::dma`]).
    pub names: Option<NameTable>,
}

impl Record for DefExt {
    const SIZE: usize = 2 * ENGINE_SLOTS * Span::ENCODED + 1 + 1 + 8 + 8 + 4 + 4;
    fn encode(&self, out: &mut [u8]) {
        let mut w = Writer::new(out);
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
        let mut ext = DefExt::default();
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
}

impl Record for GraphRec {
    const SIZE: usize = 4 + 2 * Span::ENCODED;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).u32(self.kelf).span(self.name).span(self.definition);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        GraphRec { kelf: r.u32(), name: r.span(), definition: r.span() }
    }
}

/// A KELF member `neff.json` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KelfNameRec {
    pub name: Span,
    pub mark: KelfMark,
}

impl Record for KelfNameRec {
    const SIZE: usize = Span::ENCODED + 1;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).span(self.name).u8(u8::from(self.mark == KelfMark::Op));
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let name = r.span();
        let mark = if r.u8() == 0 { KelfMark::FuncName } else { KelfMark::Op };
        KelfNameRec { name, mark }
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
/// became of it.
///
/// A weight's placement lives here rather than in a [`PayloadRec`] of its own: the weights are
/// most of a model's payloads, and this way each costs one record and one name (the
/// manifest's, relative to its directory) instead of two of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileVarRec {
    /// The def's manifest record.
    pub def: u32,
    pub file: Span,
    pub size: Option<u64>,
    /// Alignment, as its base-2 logarithm (the def checks make it a power of two).
    pub align_log2: u8,
    /// The member, once it streamed in ([`Landing::NONE`] before).
    pub landing: Landing,
}

impl FileVarRec {
    /// The alignment in bytes.
    pub fn align(&self) -> u64 {
        1u64.checked_shl(u32::from(self.align_log2)).unwrap_or(1)
    }
}

impl Record for FileVarRec {
    const SIZE: usize = 4 + Span::ENCODED + 1 + 8 + 1 + Landing::SIZE;
    fn encode(&self, out: &mut [u8]) {
        let mut w = Writer::new(out);
        w.u32(self.def)
            .span(self.file)
            .u8(u8::from(self.size.is_some()))
            .u64(self.size.unwrap_or(0))
            .u8(self.align_log2);
        self.landing.write(&mut w);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let def = r.u32();
        let file = r.span();
        let has = r.u8() != 0;
        let size = r.u64();
        let align_log2 = r.u8();
        FileVarRec { def, file, size: has.then_some(size), align_log2, landing: Landing::read(&mut r) }
    }
}

/// What became of a payload member that streamed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Landing {
    /// Its position among the archive's payload members (the report's order).
    pub seq: u32,
    /// A [`PayloadState`](super::PayloadState) code, or [`Landing::NOT_LANDED`].
    pub state: u8,
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
    const SIZE: usize = 4 + 3 + 4 + 8 + 2 + 8;
    /// The state of a weight whose member has not streamed in.
    pub const NOT_LANDED: u8 = u8::MAX;
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
        self.state != Self::NOT_LANDED && self.state != super::PayloadState::Released.code()
    }

    /// Size of the member in the tar.
    pub fn member_len(&self) -> u64 {
        self.len.saturating_add(u64::from(self.header_len))
    }

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.seq)
            .u8(self.state)
            .u8(self.usage)
            .u8(self.core)
            .u32(self.region)
            .u64(self.len)
            .u16(self.header_len)
            .u64(self.digest);
    }

    fn read(r: &mut Reader<'_>) -> Self {
        Landing {
            seq: r.u32(),
            state: r.u8(),
            usage: r.u8(),
            core: r.u8(),
            region: r.u32(),
            len: r.u64(),
            header_len: r.u16(),
            digest: r.u64(),
        }
    }
}

/// A name a manifest gives to another member: a ucode library of a `def.json`, an activation
/// set, a table of an engine JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameRec {
    /// The naming manifest's record.
    pub by: u32,
    pub kind: NameKind,
    pub name: Span,
}

/// What a [`NameRec`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameKind {
    /// `def.json` `ucode_lib[].library`.
    UcodeLib,
    /// An activation set: `S` names member `S.json`.
    ActSet,
    /// An activation set JSON's bucket table (`bkt_bin`).
    ActBucketTable,
    /// An activation set JSON's control table (`ctl_bin`).
    ActControlTable,
    /// A DVE table.
    DveTable,
}

impl Record for NameRec {
    const SIZE: usize = 4 + 1 + Span::ENCODED;
    fn encode(&self, out: &mut [u8]) {
        let k = match self.kind {
            NameKind::UcodeLib => 0,
            NameKind::ActSet => 1,
            NameKind::ActBucketTable => 2,
            NameKind::DveTable => 3,
            NameKind::ActControlTable => 4,
        };
        Writer::new(out).u32(self.by).u8(k).span(self.name);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let by = r.u32();
        let kind = match r.u8() {
            0 => NameKind::UcodeLib,
            1 => NameKind::ActSet,
            2 => NameKind::ActBucketTable,
            4 => NameKind::ActControlTable,
            _ => NameKind::DveTable,
        };
        NameRec { by, kind, name: r.span() }
    }
}

/// A payload member that is not a weight (or streamed in before the `def.json` naming it),
/// with what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PayloadRec {
    pub member: Span,
    pub landing: Landing,
    /// A later copy of the member replaced this one.
    pub superseded: bool,
    /// Nothing had named the member when it came, and it may be no payload: it was also read
    /// as a manifest, or it bears a producer metadata name. When the chain gives it no
    /// payload role, its staged copy goes without an `unreferenced` warning.
    pub quiet: bool,
    /// Reading it failed (a `.npy` header) before anything named it: the deferred error's slot,
    /// reported only if the chain reaches the member ([`NO_SLOT`]: not kept).
    pub failed: Option<u16>,
}

impl Record for PayloadRec {
    const SIZE: usize = Span::ENCODED + Landing::SIZE + 3 + 1;
    fn encode(&self, out: &mut [u8]) {
        let mut w = Writer::new(out);
        w.span(self.member);
        self.landing.write(&mut w);
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        let flags = flag(self.superseded, 1) | flag(self.quiet, 2) | flag(self.failed.is_some(), 4);
        w.u8(flags).u16(self.failed.unwrap_or(NO_SLOT));
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        let member = r.span();
        let landing = Landing::read(&mut r);
        let flags = r.u8();
        let slot = r.u16();
        PayloadRec {
            member,
            landing,
            superseded: flags & 1 != 0,
            quiet: flags & 2 != 0,
            failed: (flags & 4 != 0).then_some(slot),
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
    pub def_exts: List<DefExt>,
    pub graphs: List<GraphRec>,
    pub kelf_names: List<KelfNameRec>,
    pub file_vars: List<FileVarRec>,
    pub names: List<NameRec>,
    pub payloads: List<PayloadRec>,
    /// DMA references read before the definition they name into.
    pub dma_refs: List<DmaRefRec>,
    /// Members read as the kind their name suggests, waiting for the chain to name them.
    pub replays: List<ReplayRec>,
    /// The `neff.json` read (its manifest record), if any.
    pub neff: Option<u32>,
}

/// `dir/name` compared with `path`, without building it.
pub(crate) fn is_joined(path: &str, dir: &str, name: &str) -> bool {
    if dir.is_empty() {
        return path == name;
    }
    path.strip_prefix(dir).and_then(|rest| rest.strip_prefix('/')).is_some_and(|rest| rest == name)
}

/// `dir/name.json` compared with `path` (an activation set's member).
pub(crate) fn is_joined_json(path: &str, dir: &str, name: &str) -> bool {
    path.strip_suffix(".json").is_some_and(|stem| is_joined(stem, dir, name))
}

/// The directory of a member path (`sg00/def.json` -> `sg00`, `neff.json` -> ``).
pub(crate) fn dir_of(path: &str) -> &str {
    path.rfind('/').and_then(|i| path.get(..i)).unwrap_or("")
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
            self.file_vars.retain(arena, |v| v.def != pos || v.landing.state != Landing::NOT_LANDED);
            self.dma_refs.retain(arena, |r| r.by != pos);
            true
        } else {
            false
        }
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
    pub fn def_ext(&self, arena: &Arena<'_>, def: &ManifestRec) -> DefExt {
        if def.ext == NIL {
            DefExt::default()
        } else {
            self.def_exts.get(arena, def.ext)
        }
    }

    /// The engine JSON an engine of the def at `def` names, as `(member record, record)`.
    pub fn engine_of(&self, arena: &Arena<'_>, def: &ManifestRec, engine: EngineKey) -> Option<(u32, ManifestRec)> {
        let name = arena.str(*self.def_ext(arena, def).engines.get(engine.slot())?);
        if name.is_empty() {
            return None;
        }
        let dir = dir_of(arena.str(def.member));
        self.manifests
            .iter(arena)
            .filter(|(_, m)| !m.superseded && m.kind == ManifestKind::Engine)
            .filter(|(_, m)| is_joined(arena.str(m.member), dir, name))
            .last()
    }

    /// The instruction stream an engine runs: the engine JSON's `instr`, else `<eng>_instr`.
    pub fn instr_of<'a>(
        &self,
        arena: &'a Arena<'_>,
        def: &ManifestRec,
        json: Option<&ManifestRec>,
        engine: EngineKey,
    ) -> Option<&'a str> {
        match json {
            Some(j) if j.has_instr => Some(arena.str(j.instr)),
            _ => {
                let span = *self.def_ext(arena, def).engine_instrs.get(engine.slot())?;
                Some(arena.str(span)).filter(|s| !s.is_empty())
            }
        }
    }

    /// The directories of the definitions read so far that name `engine_json` as an engine.
    pub fn def_dirs_of<'s>(&'s self, arena: &'s Arena<'_>, engine_json: &'s str) -> impl Iterator<Item = &'s str> + 's {
        self.manifests.iter(arena).filter(|(_, m)| !m.superseded && m.kind == ManifestKind::Def).filter_map(
            move |(_, d)| {
                let dir = dir_of(arena.str(d.member));
                let names = self.def_ext(arena, &d).engines;
                names.iter().any(|s| s.len != 0 && is_joined(engine_json, dir, arena.str(*s))).then_some(dir)
            },
        )
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
                let dir = dir_of(arena.str(m.member));
                self.def_ext(arena, &m).engines.iter().any(|s| s.len != 0 && is_joined(member, dir, arena.str(*s)))
            });
        // An activation set `S` is member `S.json` of the subgraph directory: the directory of
        // the definition naming the engine JSON that lists it (§8.3), which need not be the
        // engine JSON's own (`"act": "e/Activation.json"`).
        let by_act = self.names.iter(arena).filter(|(_, n)| n.kind == NameKind::ActSet).any(|(_, n)| {
            let by = self.manifests.get(arena, n.by);
            !by.superseded
                && self
                    .def_dirs_of(arena, arena.str(by.member))
                    .any(|dir| is_joined_json(member, dir, arena.str(n.name)))
        });
        if by_def || by_act {
            return Some(ManifestKind::Engine);
        }
        None
    }
}

/// Pushes a string, turning a full arena into an error about `member`.
pub(crate) fn push_str(arena: &mut Arena<'_>, s: &str, stage: crate::Stage, member: &str) -> Result<Span, Error> {
    arena.push_str(s).map_err(|k: ErrorKind| Error::in_member(stage, member, 0, k))
}
