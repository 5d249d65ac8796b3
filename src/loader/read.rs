//! Reading one manifest: the parse into the scratch slot of its kind, with the [`Recorder`]
//! turning streamed entries into index records for the observer; then its record, its names
//! and its DMA references ([`super::dma`]).

use embedded_io::BufRead;

use super::book::Book;
use super::chain::ChainWarning;
use super::dma::{
    block_refs, desc_refs, fingerprint, sort_fingerprints, unresolved_error, NameSpace, NameTable, Notebook, RefKey,
    FINGERPRINT,
};
use super::index::{
    dir_of, is_joined, push_str, CarveoutFacts, DefExt, FileVarRec, Index, KelfNameRec, ManifestKind, ManifestRec,
    NameRec, RefKind, Scratch, Source, NO_INDEX, REFS, TARGET_ANY,
};
use super::pass::Counting;
use super::report::{Manifest, Observer, SubgraphTables};
use crate::arena::{Arena, List, Span, NIL};
use crate::error::{Error, ErrorKind, Stage, Warning, WarningKind, WarningSink};
use crate::manifest::def::ENGINE_KEYS;
use crate::manifest::kelf::KelfTarget;
use crate::manifest::neff::{kelf_mark, kelf_member, IoJoin};
use crate::manifest::{DocFault, Document, Entry, EntryAt, ManifestWarning, MrType, Visitor};

/// Reads a member body through the JSON tokenizer while keeping the archive's own error:
/// the tokenizer only sees an I/O kind, the caller gets the real gzip/tar error back.
struct Capture<'r, R: BufRead<Error = Error>> {
    inner: &'r mut R,
    error: Option<Error>,
}

impl<R: BufRead<Error = Error>> embedded_io::ErrorType for Capture<'_, R> {
    type Error = Error;
}

impl<R: BufRead<Error = Error>> embedded_io::Read for Capture<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.inner.read(buf).inspect_err(|e| self.error = Some(*e))
    }
}

impl<R: BufRead<Error = Error>> BufRead for Capture<'_, R> {
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        match self.inner.fill_buf() {
            Ok(b) => Ok(b),
            Err(e) => {
                self.error = Some(e);
                Err(e)
            }
        }
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt);
    }
}

/// Records what binding needs of each streamed entry, then hands it to the observer.
struct Recorder<'r, 'a, O: Observer> {
    arena: &'r mut Arena<'a>,
    index: &'r mut Index,
    observer: &'r mut O,
    member: &'r str,
    /// The manifest record of the member being read.
    by: u32,
    kind: ManifestKind,
    join: Option<IoJoin>,
    /// Engine JSON: the names of its directory's definition, when it kept them (a reference is
    /// then checked on the spot; otherwise it waits for the definition).
    dma_names: Option<NameTable>,
    /// Where references wait for their definition when the device lends one.
    notebook: &'r mut dyn Notebook,
    /// Where a failure's whole names are noted ([`Storage::whole_names`](super::Storage)).
    whole: &'r mut super::whole::WholeNames<'a>,
    /// The runtime's fp8 overrides (`LoadOptions::fp8`), applied to the config observed.
    fp8: crate::manifest::def::Fp8Overrides,
    /// Names this member's references last waited for (hosts only: `name-tables`).
    #[cfg(feature = "name-tables")]
    recent: RecentWaits,
}

/// The fingerprints of the last [`RecentWaits::LEN`] names a member's references waited for
/// (hosts only: `name-tables`): its DMA descriptors name the same few variables in runs, and
/// a name found here is waiting already, for this member, with its first use kept, so the
/// hash chain need not be walked again (65 % of a real training NEFF's references). Valid
/// while one member is read: nothing lets a pending reference go before its member ends.
#[cfg(feature = "name-tables")]
#[derive(Default)]
struct RecentWaits {
    /// Fingerprints noted, the oldest overwritten first (all of them the first one until as
    /// many are noted, so that every slot holds a name and a lookup compares all eight).
    fps: [u64; RecentWaits::LEN],
    /// Whether any is noted.
    any: bool,
    /// Where the next one goes.
    next: usize,
}

#[cfg(feature = "name-tables")]
impl RecentWaits {
    const LEN: usize = 8;

    fn contains(&self, fp: u64) -> bool {
        self.any && self.fps.contains(&fp)
    }

    fn note(&mut self, fp: u64) {
        if !self.any {
            self.fps = [fp; Self::LEN];
            self.any = true;
        } else if let Some(slot) = self.fps.get_mut(self.next) {
            *slot = fp;
        }
        self.next = self.next.saturating_add(1) % Self::LEN;
    }
}

impl<O: Observer> Recorder<'_, '_, O> {
    /// Records a name of `kind` the manifest being read gives.
    fn name(&mut self, kind: RefKind, name: &str, index: u16) -> Result<(), ErrorKind> {
        let rec = NameRec { by: self.by, kind, name: Span { at: 0, len: name.len() as u32 }, index };
        self.index.names.push_with_tail(self.arena, &rec, name.as_bytes())?;
        Ok(())
    }

    /// Records what binding needs of `entry`, the element at `index` of its array (`NO_INDEX`:
    /// none).
    fn record(&mut self, entry: &Entry<'_>, index: u16) -> Result<(), ErrorKind> {
        match *entry {
            Entry::Node(node) => {
                if let (Some(mark), Some(kelf)) = (kelf_mark(node), kelf_member(node)) {
                    let name = self.arena.push_str(kelf)?;
                    self.index.kelf_names.push(self.arena, &KelfNameRec { name, mark, index })?;
                }
            }
            Entry::Graph(g) => {
                let name = self.arena.push_str(&g.name)?;
                let definition = self.arena.push_str(&g.definition)?;
                let rec = super::index::GraphRec { kelf: self.by, name, definition, index };
                self.index.graphs.push(self.arena, &rec)?;
            }
            Entry::Var(v) => {
                if let (Some(MrType::Buffer), Some(file)) = (v.mr_type(), &v.file_name) {
                    // A power of two (the def checks refuse anything else).
                    let align_log2 = v.alignment.unwrap_or(1).max(1).trailing_zeros() as u8;
                    let rec = FileVarRec::new(file.len(), v.size, align_log2);
                    let head = rec.tail_head();
                    let head: &[u8] = head.as_ref().map_or(&[], |h| h);
                    self.index.reading_vars.push_with_tails(self.arena, &rec, [head, file.as_bytes()])?;
                }
            }
            _ => {}
        }
        // The names the table's rows take from entries.
        for row in &REFS {
            if let Source::Entry(names) = row.source {
                names(entry, &mut |name| self.name(row.kind, name, index))?;
            }
        }
        if let Some(join) = self.join.as_mut() {
            join.see(self.arena, entry)?;
        }
        Ok(())
    }
}

impl<O: Observer> Recorder<'_, '_, O> {
    /// DMA names (spec §8.2, [`super::dma`]): a definition's queue and variable names are
    /// collected; a reference is checked against its definition's names, or waits for them.
    fn dma(&mut self, entry: &Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        let fail = |k| at.error(k);
        match *entry {
            Entry::Var(v) if self.kind == ManifestKind::Def => self.collect(NameSpace::Var, &v.name).map_err(fail),
            Entry::DmaQueue(q) if self.kind == ManifestKind::Def => {
                self.collect(NameSpace::Queue, &q.name).map_err(fail)
            }
            Entry::DmaBlock(b) | Entry::DefDmaBlock(b) => {
                block_refs(b).try_for_each(|(key, name)| self.reference(key, name, at))
            }
            Entry::DmaDesc(d) => desc_refs(d).try_for_each(|(key, name)| self.reference(key, name, at)),
            Entry::CceSource(s) => s.from.as_deref().map_or(Ok(()), |name| self.reference(RefKey::From, name, at)),
            _ => Ok(()),
        }
    }

    /// A name the definition gives: the references waiting for it are resolved now, and it
    /// joins the table an engine JSON still to come would be checked against. A table that
    /// does not fit is no error yet: only an engine JSON still to come needs it
    /// (`settle_dma_names`).
    fn collect(&mut self, space: NameSpace, name: &str) -> Result<(), ErrorKind> {
        let fp = fingerprint(space, name);
        let (manifests, pos, dir) = (self.index.manifests, self.by, dir_of(self.member));
        let mine = |arena: &Arena<'_>, by: u32| {
            let m = manifests.get(arena, by);
            by == pos || (m.kind == ManifestKind::Engine && dir_of(arena.str(m.member)) == dir)
        };
        self.index.pending.resolve(self.arena, self.notebook, fp, mine)?;
        if self.index.names_full.is_some() {
            return Ok(());
        }
        match self.arena.alloc_top(FINGERPRINT) {
            Ok(at) => self.arena.write(at, &fp.to_le_bytes()),
            Err(e) => self.index.names_full = Some(e),
        }
        Ok(())
    }

    fn reference(&mut self, key: RefKey, name: &str, at: &EntryAt<'_>) -> Result<(), DocFault> {
        let fp = fingerprint(key.space(), name);
        if let Some(names) = self.dma_names {
            if names.contains(self.arena, fp) {
                return Ok(());
            }
            return Err(at.error(ErrorKind::Manifest(key.unresolved(name, false))).about(key.key()));
        }
        #[cfg(feature = "name-tables")]
        if self.recent.contains(fp) {
            return Ok(());
        }
        let floor = self.index.landings.floor();
        let (arena, nb, by) = (&mut *self.arena, &mut *self.notebook, self.by);
        let waited = self.index.pending.wait(arena, nb, floor, by, (key, fp), at.offset(), || at.key_path(), name);
        #[cfg(feature = "name-tables")]
        if waited.is_ok() {
            self.recent.note(fp);
        }
        waited.map_err(|k| at.error(k))?;
        self.index.landings.limit(self.index.pending.far_low());
        Ok(())
    }
}

impl<O: Observer> Visitor for Recorder<'_, '_, O> {
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        let index = index_of(at);
        self.record(&entry, index).map_err(|k| at.error(k))?;
        self.dma(&entry, at)?;
        self.observer.entry(self.member, &entry);
        // The runtime's records, as each is known.
        match entry {
            Entry::DmaQueue(q) => self.observer.dma_queue(self.member, &q.name, &q.layout()),
            Entry::Carveout(c) => self.observer.carveout(self.member, index, &c.layout()),
            _ => {}
        }
        Ok(())
    }

    fn failed(&mut self, member: &str, path: Option<&str>, key: Option<&'static str>) {
        self.whole.note(member, path, key);
    }
}

/// The index of the element `at` names in its array (`nodes[2]`: 2), read back from its key
/// path's last segment, for the chain's key paths; [`NO_INDEX`] when it is a map's entry, or
/// past `u16`.
fn index_of(at: &EntryAt<'_>) -> u16 {
    // Bytes, not `str` patterns: their generic searches cost flash on a controller.
    // A host reads the bytes without a UTF-8 check (the path is UTF-8); the image calls the
    // one `name` it links anyway.
    #[cfg(not(target_os = "none"))]
    let name = at.name_bytes();
    #[cfg(target_os = "none")]
    let name = at.name().as_bytes();
    let Some((b']', head)) = name.split_last() else { return NO_INDEX };
    let digits = head.iter().rposition(|&b| b == b'[').and_then(|open| head.get(open.checked_add(1)?..));
    let parsed = digits
        .filter(|d| !d.is_empty())
        .and_then(|d| d.iter().try_fold(0u16, |n, &b| n.checked_mul(10)?.checked_add(u16::from(b.wrapping_sub(b'0')))));
    parsed.filter(|&n| n != NO_INDEX).unwrap_or(NO_INDEX)
}

/// Gives the NEFF's name to the warnings whose runtime message names it
/// (`Engine %s not found in NEFF %s, using empty placeholder`).
struct NamingNeff<'s, S: WarningSink + ?Sized> {
    inner: &'s mut S,
    neff: &'s str,
}

impl<S: WarningSink + ?Sized> WarningSink for NamingNeff<'_, S> {
    fn warn(&mut self, warning: &Warning) {
        let mut warning = *warning;
        if let WarningKind::Manifest(ManifestWarning::EngineMissing { neff, .. }) = &mut warning.kind {
            *neff = crate::error::Text::new(self.neff);
        }
        self.inner.warn(&warning);
    }
}

/// [`Document::parse_into`] in a frame of its own, one per tier: inlined into
/// [`Reader::parse`], the four tiers' parser state would all be reserved in its frame,
/// live under the whole parse, where only one tier's is ever needed. A document read
/// without error goes on to `then` (with the visitor back); every tier's outcome is the same
/// `Result<(), Error>`, so the caller keeps one slot for it, not one per tier.
#[inline(never)]
fn parse_doc<D: Document, R: BufRead, S: WarningSink, V: Visitor>(
    doc: &mut D,
    tok: &mut crate::json::Tokenizer<'_>,
    src: &mut R,
    name: &str,
    sink: &mut S,
    visitor: &mut V,
    then: impl FnOnce(&D, &D::Facts, &mut V) -> Result<(), Error>,
) -> Result<(), Error> {
    let facts = doc.parse_into(tok, src, name, sink, visitor)?;
    then(doc, &facts, visitor)
}

/// Puts the archive's own error (`inner`, what the tokenizer saw as an I/O fault) in place of
/// the tokenizer's view of it. Out of line: its temporaries stay out of [`Reader::parse`].
#[cold]
#[inline(never)]
fn archive_error(e: &mut Error, inner: &Error, name: &str) {
    *e = inner.with_member(name);
}

/// What a definition adds to the index once it is read: its extension record (file
/// variables, carveout facts), after the observer has seen it. A frame of its own, entered
/// after the parse: in [`Reader::parse`] it would hold its stack under the whole parse.
#[inline(never)]
fn record_def<O: Observer>(
    recorder: &mut Recorder<'_, '_, O>,
    doc: &crate::manifest::DefJson,
    facts: &crate::manifest::def::DefFacts,
    pos: u32,
    name: &str,
) -> Result<(), Error> {
    recorder.observer.manifest(name, Manifest::Def(doc, facts));
    let fp8 = doc.fp8_info_with(&recorder.fp8);
    let tables = SubgraphTables {
        mem_ref_set: facts.mem_ref_set(),
        cc_streams: doc.cc_streams_layout(),
        fp8,
        mla_tail: facts.mla_tail(doc, fp8),
    };
    recorder.observer.subgraph_tables(name, &tables);
    let vars = core::mem::take(&mut recorder.index.reading_vars);
    let ext = DefExt { def: pos, vars, carveouts: CarveoutFacts::from_def(facts), ..DefExt::default() };
    let at =
        recorder.index.def_exts.push(recorder.arena, &ext).map_err(|k| Error::about_member(Stage::DefJson, name, k))?;
    let mut rec = recorder.index.manifests.get(recorder.arena, pos);
    rec.ext = at;
    recorder.index.manifests.set(recorder.arena, pos, &rec);
    Ok(())
}

/// The end of a document read without error (its last byte at `end`): `neff.json`'s I/O
/// join, an engine JSON's scalar names into the index, and the manifest to the observer. A
/// frame of its own, entered after the parse, for the reason [`record_def`] gives.
#[inline(never)]
fn conclude<O: Observer, S: WarningSink>(
    scratch: &Scratch,
    recorder: &mut Recorder<'_, '_, O>,
    name: &str,
    end: u64,
    sink: &mut Counting<'_, S>,
    io_counts: &mut (u32, u32),
) -> Result<(), Error> {
    // The names the table's rows take from the manifest's scalar keys.
    for row in &REFS {
        if let Some(named) = match row.source {
            Source::Scalar(name_in) => name_in(scratch),
            _ => None,
        } {
            let stage = recorder.kind.stage();
            recorder.name(row.kind, named, NO_INDEX).map_err(|k| Error::in_member(stage, name, end, k))?;
        }
    }
    match scratch {
        Scratch::Neff(doc) => {
            let join = recorder.join.take();
            if let Some(join) = join {
                let observer = &mut *recorder.observer;
                let (mut inputs, mut outputs) = (0u32, 0u32);
                join.finish(recorder.arena, name, end, sink, &mut |t| {
                    match t.kind {
                        crate::manifest::IoKind::Input => inputs = inputs.saturating_add(1),
                        crate::manifest::IoKind::Output => outputs = outputs.saturating_add(1),
                    }
                    observer.io_tensor(t);
                })?;
                *io_counts = (inputs, outputs);
            }
            recorder.observer.manifest(name, Manifest::Neff(doc));
        }
        Scratch::Kelf(doc) => recorder.observer.manifest(name, Manifest::Kelf(doc)),
        Scratch::Engine(doc) => recorder.observer.manifest(name, Manifest::Engine(doc)),
        Scratch::Def(_) | Scratch::Empty => {}
    }
    Ok(())
}

/// True for an error that ends the load at once: the archive itself failed, or the arena is
/// full. Anything else in a speculatively read manifest waits for the chain.
fn is_fatal(e: &Error) -> bool {
    matches!(e.stage, Stage::Io | Stage::Gzip | Stage::Tar) || matches!(e.kind, ErrorKind::ArenaFull { .. })
}

/// The manifest reader: the tokenizer (its string scratch lent from the front of the arena)
/// and the document being read, whose scalar keys wait here until the read settles them into
/// the [`Book`].
pub(super) struct Reader<'a> {
    tok: crate::json::Tokenizer<'a>,
    scratch: Scratch,
}

impl<'a> Reader<'a> {
    /// A reader over `tok`, with no document.
    pub(super) fn new(tok: crate::json::Tokenizer<'a>) -> Self {
        Self { tok, scratch: Scratch::Empty }
    }

    /// Lets go of the last document read.
    pub(super) fn clear(&mut self) {
        self.scratch = Scratch::Empty;
    }
}

impl Reader<'_> {
    /// Reads one manifest member as `kind`. Its outcome is recorded; an error is returned only
    /// when it ends the load (the archive failed, the arena is full, `neff.json` is bad).
    #[inline]
    #[allow(clippy::too_many_arguments)] // the book and reader it works on, then the read's own
    pub(super) fn read_manifest<B: BufRead<Error = Error>, S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        kind: ManifestKind,
        name: &str,
        body: &mut B,
        nb: &mut dyn Notebook,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        self.read_manifest_as(book, kind, name, body, false, nb, observer, sink)
    }

    /// [`Self::read_manifest`]; `rereading`: the member is read again from the replay store
    /// as the kind the chain names it as, replacing its first reading (no duplicate).
    ///
    /// The body is a trait object: a member comes from the archive, through the tee, or from
    /// the replay store, and one copy of the parsers serves all three (flash on a controller).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn read_manifest_as<S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        kind: ManifestKind,
        name: &str,
        mut body: &mut dyn BufRead<Error = Error>,
        rereading: bool,
        nb: &mut dyn Notebook,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        let pos = self.open_manifest(book, kind, name, rereading, sink)?;
        let names_mark = book.arena.mark_top();
        // One slot for the outcome, settled in place and returned as it is.
        let mut outcome = self.parse(book, kind, pos, name, &mut body, nb, observer, sink);
        self.close_manifest(book, kind, pos, name, names_mark, nb, &mut outcome);
        outcome
    }

    /// The start of a manifest read: supersedes an earlier reading of `name` (a warning unless
    /// `rereading`) and adds its record, returning the record's position. A frame of its own,
    /// as [`Self::close_manifest`] is: their locals would otherwise stay reserved in
    /// [`Self::read_manifest_as`]'s frame under the whole parse.
    #[inline(never)]
    fn open_manifest<S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        kind: ManifestKind,
        name: &str,
        rereading: bool,
        sink: &mut Counting<'_, S>,
    ) -> Result<u32, Error> {
        let stage = kind.stage();
        if book.supersede(name) && !rereading {
            // The later copy wins, as in the runtime's member map.
            sink.warn(&Warning::about_member(stage, name, WarningKind::Chain(ChainWarning::DuplicateMember)));
        }
        let member = push_str(&mut book.arena, name, stage, name)?;
        let pos = book
            .index
            .manifests
            .push(&mut book.arena, &ManifestRec::new(member, kind))
            .map_err(|k| Error::about_member(stage, name, k))?;
        if kind == ManifestKind::Neff {
            // A second neff.json replaces what the first one named.
            book.index.kelf_names = Default::default();
        }
        Ok(pos)
    }

    /// The end of a manifest read (record `pos`, names collected since `names_mark`), its
    /// `outcome` settled in place: settles a definition's DMA names, keeps a failed read's
    /// error for the chain (the outcome is then `Ok`) unless it ends the load, and fills the
    /// record from the scratch document.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // the book and reader it works on, then the read's own
    fn close_manifest(
        &mut self,
        book: &mut Book<'_>,
        kind: ManifestKind,
        pos: u32,
        name: &str,
        names_mark: usize,
        nb: &mut dyn Notebook,
        outcome: &mut Result<(), Error>,
    ) {
        if outcome.is_ok() && kind == ManifestKind::Def {
            *outcome = self.settle_dma_names(book, pos, name, names_mark, nb);
        }
        // What the definition collected and did not keep.
        book.arena.release_top(names_mark);
        let mut rec = book.index.manifests.get(&book.arena, pos);
        if let Err(e) = outcome {
            if is_fatal(e) || kind == ManifestKind::Neff {
                return;
            }
            rec.failed = Some(book.deferred.keep(*e));
        }
        *outcome = self.fill_record(book, pos, &mut rec, name);
        if outcome.is_err() {
            return;
        }
        book.index.manifests.set(&mut book.arena, pos, &rec);
        if kind == ManifestKind::Neff && rec.failed.is_none() {
            book.index.neff = Some(pos);
        }
    }

    /// One generic read-a-document step: parse the body into the scratch slot of `kind`, with
    /// the recorder as visitor.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn parse<B: BufRead<Error = Error>, S: WarningSink>(
        &mut self,
        book: &mut Book<'_>,
        kind: ManifestKind,
        pos: u32,
        name: &str,
        body: &mut B,
        nb: &mut dyn Notebook,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        self.reset_scratch(kind);
        // Only the definition being read records file variables here.
        book.index.reading_vars = List::new();
        book.index.names_full = None;
        let join = (kind == ManifestKind::Neff).then(|| IoJoin::new(&book.arena));
        let dma_names = match kind {
            ManifestKind::Engine => book.index.dir_names(&book.arena, dir_of(name)),
            _ => None,
        };
        let mut recorder = Recorder {
            arena: &mut book.arena,
            index: &mut book.index,
            observer,
            member: name,
            by: pos,
            kind,
            join,
            dma_names,
            notebook: nb,
            whole: &mut book.whole,
            fp8: book.options.fp8,
            #[cfg(feature = "name-tables")]
            recent: RecentWaits::default(),
        };
        let mut src = Capture { inner: body, error: None };
        let tok = &mut self.tok;
        let kelf_mark = &mut book.kelf_mark;
        let mut result = match &mut self.scratch {
            Scratch::Neff(doc) => parse_doc(doc, tok, &mut src, name, sink, &mut recorder, |_, facts, _| {
                *kelf_mark = facts.kelf_mark();
                Ok(())
            }),
            Scratch::Kelf(doc) => parse_doc(doc, tok, &mut src, name, sink, &mut recorder, |_, _, _| Ok(())),
            Scratch::Def(doc) => {
                let mut sink = NamingNeff { inner: &mut *sink, neff: book.neff_name.as_str() };
                parse_doc(doc, tok, &mut src, name, &mut sink, &mut recorder, |doc, facts, recorder| {
                    record_def(recorder, doc, facts, pos, name)
                })
            }
            Scratch::Engine(doc) => parse_doc(doc, tok, &mut src, name, sink, &mut recorder, |_, _, _| Ok(())),
            Scratch::Empty => Ok(()),
        };
        if let (Err(e), Some(inner)) = (&mut result, &src.error) {
            if matches!(e.kind, ErrorKind::Io(_)) {
                archive_error(e, inner, name);
            }
        }
        // One slot for the outcome, returned as it is: a `?` here would copy the error
        // through a second one.
        if result.is_ok() {
            let end = self.tok.offset();
            result = conclude(&self.scratch, &mut recorder, name, end, sink, &mut book.io_counts);
        }
        result
    }

    /// Empties the scratch slot as a document of `kind`. A frame of its own: the new value is
    /// built on the stack (3 KiB for a `def.json`) and copied in, and that temporary must not
    /// stay reserved in [`Self::parse`]'s frame, which is live under the whole parse.
    #[inline(never)]
    fn reset_scratch(&mut self, kind: ManifestKind) {
        self.scratch = Scratch::empty(kind);
    }

    /// Copies what binding needs of the scratch document into its record (at `pos`).
    fn fill_record(&mut self, book: &mut Book<'_>, pos: u32, rec: &mut ManifestRec, name: &str) -> Result<(), Error> {
        let stage = rec.kind.stage();
        let fail = |k: ErrorKind| Error::about_member(stage, name, k);
        match &self.scratch {
            Scratch::Kelf(doc) => {
                rec.graphs = u32::try_from(doc.graphs.count).unwrap_or(u32::MAX);
                rec.target = match doc.target_kind() {
                    Ok(KelfTarget::Any) => TARGET_ANY,
                    Ok(KelfTarget::Arch(a)) => u8::try_from(a.value()).unwrap_or(0),
                    Err(_) => 0,
                };
            }
            Scratch::Def(doc) => {
                // A def that failed to parse has no extension yet: its engine names still count.
                let mut ext = book.index.def_ext(&book.arena, rec);
                for engine in crate::manifest::def::ENGINE_KEYS {
                    let slot = engine.slot();
                    if let (Some(dst), Some(json)) = (ext.engines.get_mut(slot), doc.engine_member(engine)) {
                        *dst = book.arena.push_str(json).map_err(fail)?;
                    }
                    if let (Some(dst), Some(instr)) = (ext.engine_instrs.get_mut(slot), doc.engine_stream(engine)) {
                        *dst = book.arena.push_str(instr).map_err(fail)?;
                    }
                }
                if rec.ext == crate::arena::NIL {
                    // It failed to parse: its variables name nothing the chain can reach.
                    ext.def = pos;
                    rec.ext = book.index.def_exts.push(&mut book.arena, &ext).map_err(fail)?;
                } else {
                    book.index.def_exts.set(&mut book.arena, rec.ext, &ext);
                }
            }
            Scratch::Engine(doc) => {
                if let Some(instr) = &doc.instr {
                    rec.instr = book.arena.push_str(instr).map_err(fail)?;
                    rec.has_instr = true;
                }
            }
            Scratch::Neff(_) | Scratch::Empty => {}
        }
        Ok(())
    }
}

// DMA names (spec §8.2, `dma.rs`) at the end of a definition.
impl Reader<'_> {
    /// The end of a definition read (member `member`, record `pos`): its names, collected in
    /// the arena's scratch since `mark`, are sorted; every reference waiting for this
    /// directory's definition is checked and let go (an engine JSON's first unresolved one
    /// becomes that member's error, kept until the chain reaches it; the definition's own is
    /// its error, returned); the names are kept if an engine JSON the definition names is
    /// still to come.
    fn settle_dma_names(
        &mut self,
        book: &mut Book<'_>,
        pos: u32,
        member: &str,
        mark: usize,
        nb: &mut dyn Notebook,
    ) -> Result<(), Error> {
        let scratch = book.arena.top_since_mut(mark);
        sort_fingerprints(scratch);
        let count = u32::try_from(scratch.len() / FINGERPRINT).unwrap_or(u32::MAX);
        let names = NameTable { at: u32::try_from(book.arena.mark_top()).unwrap_or(u32::MAX), count };
        let dir = dir_of(member);
        let mut own = None;
        let fail = |k| Error::about_member(Stage::DefJson, member, k);
        let names_kept = book.index.names_full.is_none();
        let mut at = book.index.pending.first();
        for _ in 0..book.index.pending.len() {
            if at == NIL {
                break;
            }
            let r = book.index.pending.get(&book.arena, nb, at).map_err(fail)?;
            let by = book.index.manifests.get(&book.arena, r.by);
            let in_dir = by.kind == ManifestKind::Engine && dir_of(book.arena.str(by.member)) == dir;
            let ours = r.by == pos || in_dir;
            let found = r.resolved || (names_kept && names.contains(&book.arena, r.fp));
            if ours && !by.superseded && !found && !names_kept && r.by == pos {
                // The definition's own reference, met after its names streamed past, and
                // their table did not fit: the arena is what it needs.
                return Err(fail(book.index.names_full.unwrap_or(ErrorKind::Truncated)));
            }
            if ours && !by.superseded && !found {
                let e = if r.by == pos {
                    own.is_none().then(|| self.pending_error(book, at, &r, Stage::DefJson, member, nb)).transpose()?
                } else if by.failed.is_none() {
                    Some(self.pending_error(book, at, &r, Stage::Engine, book.arena.str(by.member), nb)?)
                } else {
                    None
                };
                match e {
                    Some(e) if r.by == pos => own = Some(e),
                    Some(e) => book.fail_manifest(r.by, e),
                    None => {}
                }
            }
            at = r.next;
        }
        // What the definition settled (its own, its directory's engine JSONs'), and what a
        // superseded member left, goes.
        let manifests = book.index.manifests;
        let waiting = |arena: &Arena<'_>, r: &super::dma::PendingRef| {
            let by = manifests.get(arena, r.by);
            let in_dir = by.kind == ManifestKind::Engine && dir_of(arena.str(by.member)) == dir;
            !(r.by == pos || by.superseded || in_dir)
        };
        book.index.pending.retain(&mut book.arena, nb, waiting).map_err(fail)?;
        book.index.landings.limit(book.index.pending.far_low());
        if self.engine_to_come(book, dir) {
            if let Some(full) = book.index.names_full {
                // An engine JSON still to come is checked against the names: they must fit.
                return Err(fail(full));
            }
            let at = book.arena.keep_top(mark);
            let rec = book.index.manifests.get(&book.arena, pos);
            if rec.ext != NIL {
                let mut ext = book.index.def_exts.get(&book.arena, rec.ext);
                ext.names = Some(NameTable { at, count });
                book.index.def_exts.set(&mut book.arena, rec.ext, &ext);
            }
        }
        own.map_or(Ok(()), Err)
    }

    /// The error of the pending reference `r` in `slot`, unresolved, in `member`.
    #[cold]
    #[inline(never)]
    fn pending_error(
        &self,
        book: &Book<'_>,
        slot: u32,
        r: &super::dma::PendingRef,
        stage: Stage,
        member: &str,
        nb: &dyn Notebook,
    ) -> Result<Error, Error> {
        let (mut path, mut name) = ([0u8; 255], [0u8; super::dma::NAME_TAIL]);
        let texts = book.index.pending.texts(&book.arena, nb, slot, r, &mut path, &mut name);
        let (path, name, elided) = texts.map_err(|k| Error::about_member(stage, member, k))?;
        Ok(unresolved_error(stage, member, r.offset, path, r.key, name, elided))
    }

    /// Whether the definition just read (in the scratch slot) names an engine JSON of `dir`
    /// that has not been read yet.
    fn engine_to_come(&self, book: &Book<'_>, dir: &str) -> bool {
        let Scratch::Def(doc) = &self.scratch else {
            return false;
        };
        ENGINE_KEYS.into_iter().filter_map(|e| doc.engine_member(e)).any(|json| {
            !book
                .index
                .manifests
                .iter(&book.arena)
                .any(|(_, m)| !m.superseded && is_joined(book.arena.str(m.member), dir, json))
        })
    }
}

#[cfg(test)]
#[cfg(feature = "name-tables")]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::RecentWaits;
    use heapless::Deque;

    /// The recent names are the last eight noted, no more, no fewer, whatever the sequence
    /// (zero included: no slot stands for a name before one is noted).
    #[test]
    fn recent_waits_hold_the_last_eight_noted() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for range in [1u64, 3, 8, 9, 20, 1000] {
            let (mut recent, mut model) = (RecentWaits::default(), Deque::<u64, { RecentWaits::LEN }>::new());
            for fp in [0, 1, 2] {
                assert!(!recent.contains(fp), "nothing noted yet");
            }
            for _ in 0..2000 {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let fp = seed % range;
                let held = model.iter().any(|&m| m == fp);
                assert_eq!(recent.contains(fp), held, "range {range}, fp {fp}");
                // The reader notes a name only when it was not found.
                if !held {
                    recent.note(fp);
                    if model.is_full() {
                        model.pop_front();
                    }
                    model.push_back(fp).unwrap();
                }
            }
        }
    }
}
