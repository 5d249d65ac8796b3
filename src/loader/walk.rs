//! The pass over the members: each one is a manifest, a payload, or skipped.
//!
//! What a member is comes from the manifest that names it: `neff.json` is found by its name
//! (the runtime looks it up so), a KELF by `attrs.kelf`, a definition by `graphs[].definition`,
//! an engine or activation-set JSON by a `def.json` engine key or `activation_function_sets`,
//! a payload by the key that names it (a weight's `file_name`, an `instr`, a table), whatever
//! its suffix. The tar order is not the chain order (real NEFFs put `neff.json` last), so a
//! member nothing read so far names, and that may be a manifest (a `.json` name, or a body that
//! opens a JSON object), is read both ways at once: parsed as the manifest its name suggests (a
//! root member as a KELF, `*/def.json` as a definition, any other as an engine JSON), while its
//! bytes stream to a staging region as a payload's would. The chain then takes whichever it
//! names; an error of the manifest read is kept until the chain reaches it. Debug members are
//! never read, and known producer metadata (`info.json`, ...) is staged as a payload, not parsed.

use embedded_io::BufRead;

use super::index::{dir_of, is_joined, push_str, FileVarRec, KelfNameRec, Landing, ManifestRec, NameRec, TARGET_ANY};
use super::index::{usage_code, PayloadRec, RefKind, ReplayRec, Source, REFS};
use super::place::hal_error;
use super::PayloadState;
use super::{Counting, Loader, Manifest, ManifestKind, Observer, Scratch, MEMBER_PATH};
use crate::archive::Archive;
use crate::arena::{Arena, List, Span, NIL};
use crate::digest::Digest64;
use crate::error::{Error, ErrorKind, Stage, Warning, WarningKind, WarningSink};
use crate::hal::{AllocRequest, DeviceError, Hal, RegionId};
use crate::manifest::def::ENGINE_KEYS;
use crate::manifest::kelf::KelfTarget;
use crate::manifest::neff::{kelf_mark, kelf_member, IoJoin};
use crate::manifest::UsageClass;
use crate::manifest::{DocFault, Document, Entry, EntryAt, ManifestWarning, MrType, Visitor};

use super::chain::ChainWarning;
use super::dma::{
    block_refs, desc_refs, fingerprint, sort_fingerprints, DmaRefRec, NameSpace, NameTable, RefKey, FINGERPRINT,
};
use super::index::{CarveoutFacts, DefExt, Index};
use super::report::LoadReport;

/// Producer metadata at the root or in a subgraph directory that no runtime path reads.
const METADATA_NAMES: [&str; 8] = [
    "info.json",
    "hlo_stats.json",
    "metrics.json",
    "hlo_metrics.json",
    "global_metric_store.json",
    "kernel_debug_info.json",
    "loop.json",
    "tensor_map.json",
];

/// What the walk does with a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// Named as a manifest of this kind (or `neff.json`).
    Manifest(ManifestKind),
    /// Named as a payload, or not JSON: streamed to the device.
    Payload,
    /// Producer metadata nothing names yet (`info.json`, ...): streamed to the device as a
    /// payload met before its `def.json` would be, and released without a warning if nothing
    /// names it (a weight may bear such a name: §15.18).
    Metadata,
    /// Nothing names it yet and it may be a manifest: read as one of this kind (its name's
    /// suggestion) while its bytes stream to the device as a payload would, so that the chain
    /// can later name it either way (§15.18: the naming key decides, not the suffix).
    Either(ManifestKind),
}

/// Debug data (`debug_info/…`, `*.dbg`, `*.asm`): never read (§15.18).
pub(super) fn is_debug(name: &str) -> bool {
    let dir = dir_of(name);
    let file = name.get(dir.len()..).unwrap_or(name).trim_start_matches('/');
    dir == "debug_info"
        || dir.starts_with("debug_info/")
        || file.ends_with(".dbg")
        || file.as_bytes().windows(5).any(|w| w == b".dbg_")
        || file.ends_with(".asm")
        || file.ends_with("_dbg")
}

/// The kind a JSON member's name suggests, for a speculative read.
fn guess(name: &str) -> ManifestKind {
    let dir = dir_of(name);
    if dir.is_empty() {
        ManifestKind::Kelf
    } else if name.get(dir.len()..) == Some("/def.json") {
        ManifestKind::Def
    } else {
        ManifestKind::Engine
    }
}

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

/// Whether a member's first bytes, past whitespace, open a JSON object. Looks at the first
/// chunk only and consumes nothing.
fn starts_object<R: BufRead<Error = Error>>(body: &mut R) -> Result<bool, Error> {
    let chunk = body.fill_buf()?;
    Ok(chunk.iter().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r')) == Some(&b'{'))
}

/// A member's bytes read back from the replay store.
struct Replayed<'b>(&'b [u8]);

impl embedded_io::ErrorType for Replayed<'_> {
    type Error = Error;
}

impl embedded_io::Read for Replayed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        crate::read_buffered(self, buf)
    }
}

impl BufRead for Replayed<'_> {
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        Ok(self.0)
    }

    fn consume(&mut self, amt: usize) {
        self.0 = self.0.get(amt..).unwrap_or_default();
    }
}

/// The replay store was too small for a member the chain names as another kind than it was
/// first read as.
fn replay_capacity(capacity: usize) -> ErrorKind {
    ErrorKind::Capacity(crate::error::CapacityError { limit: "REPLAY", capacity: capacity as u64 })
}

/// A member body read by the manifest parser while every byte it consumes also streams into
/// a device region (and a digest), as a payload's would.
struct Tee<'r, R: BufRead<Error = Error>, H: Hal> {
    inner: &'r mut R,
    hal: &'r mut H,
    region: Option<RegionId>,
    /// Bytes consumed (and written) so far.
    written: u64,
    /// Borrowed, not owned: built in place in the caller's frame, not copied into the tee.
    digest: &'r mut Digest64,
    /// The first device error met while consuming (`consume` cannot return one), and where;
    /// kept small: the tee lives on the deepest path of a load.
    hal_error: Option<(crate::hal::HalError, u64)>,
    /// Asking the member again for the bytes being consumed failed (it never does: the bytes
    /// are buffered), so not all of them reached the device.
    lost_bytes: bool,
    /// The free part of the replay store, and how much of it the member filled; `overflow`
    /// once the member did not fit.
    replay: &'r mut [u8],
    kept: usize,
    overflow: bool,
}

impl<R: BufRead<Error = Error>, H: Hal> Tee<'_, R, H> {
    /// Consumes the rest of the member (what the parser left, after an error or trailing data);
    /// an error reading it goes to `read`, the read's outcome. Out of line, and writing into
    /// the caller's slot rather than returning one of its own: a frame holding the tee is live
    /// under the whole parse.
    #[inline(never)]
    fn drain(&mut self, read: &mut Result<(), Error>) {
        loop {
            let n = match self.fill_buf() {
                Ok(chunk) => chunk.len(),
                Err(e) => {
                    *read = Err(e);
                    return;
                }
            };
            if n == 0 || self.hal_error.is_some() {
                return;
            }
            self.consume(n);
        }
    }
}

/// What a [`Tee`] saw, once the member is read.
struct Teed {
    written: u64,
    digest: u64,
    hal_error: Option<(crate::hal::HalError, u64)>,
    lost_bytes: bool,
    /// Bytes kept in the replay store, and whether the member did not fit there.
    kept: usize,
    lost: bool,
}

impl Teed {
    /// The error of the copy of `member` to the device, if it failed.
    fn error(&self, member: &str) -> Option<Error> {
        match (self.hal_error, self.lost_bytes) {
            (Some((e, offset)), _) => Some(hal_error(member, Some(offset), e)),
            (None, true) => Some(Error::in_member(Stage::Payload, member, self.written, ErrorKind::Truncated)),
            (None, false) => None,
        }
    }

    /// Whether every byte reached the device.
    fn complete(&self) -> bool {
        self.hal_error.is_none() && !self.lost_bytes
    }
}

impl<R: BufRead<Error = Error>, H: Hal> embedded_io::ErrorType for Tee<'_, R, H> {
    type Error = Error;
}

impl<R: BufRead<Error = Error>, H: Hal> embedded_io::Read for Tee<'_, R, H> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        crate::read_buffered(self, buf)
    }
}

impl<R: BufRead<Error = Error>, H: Hal> BufRead for Tee<'_, R, H> {
    fn fill_buf(&mut self) -> Result<&[u8], Error> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // The bytes being consumed are the front of the chunk `fill_buf` returned; asking for
        // it again reads nothing new.
        match self.inner.fill_buf() {
            Ok(chunk) => {
                let bytes = chunk.get(..amt).unwrap_or(chunk);
                if let (Some(region), None) = (self.region, self.hal_error) {
                    if let Err(e) = self.hal.write(region, self.written, bytes) {
                        self.hal_error = Some((e.kind(), self.written));
                    }
                }
                self.digest.update(bytes);
                self.written = self.written.saturating_add(bytes.len() as u64);
                let end = self.kept.checked_add(bytes.len()).filter(|_| !self.overflow);
                match end.and_then(|end| self.replay.get_mut(self.kept..end)) {
                    Some(dst) => {
                        dst.copy_from_slice(bytes);
                        self.kept = self.kept.saturating_add(bytes.len());
                    }
                    None => self.overflow = true,
                }
            }
            Err(_) => self.lost_bytes = true,
        }
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
    /// Where a failure's whole names are noted ([`Storage::whole_names`](super::Storage)).
    whole: &'r mut super::whole::WholeNames<'a>,
}

impl<O: Observer> Recorder<'_, '_, O> {
    /// Records a name of `kind` the manifest being read gives.
    fn name(&mut self, kind: RefKind, name: &str) -> Result<(), ErrorKind> {
        let rec = NameRec { by: self.by, kind, name: Span { at: 0, len: name.len() as u32 } };
        self.index.names.push_with_tail(self.arena, &rec, name.as_bytes())?;
        Ok(())
    }

    fn record(&mut self, entry: &Entry<'_>) -> Result<(), ErrorKind> {
        match *entry {
            Entry::Node(node) => {
                if let (Some(mark), Some(kelf)) = (kelf_mark(node), kelf_member(node)) {
                    let name = self.arena.push_str(kelf)?;
                    self.index.kelf_names.push(self.arena, &KelfNameRec { name, mark })?;
                }
            }
            Entry::Graph(g) => {
                let name = self.arena.push_str(&g.name)?;
                let definition = self.arena.push_str(&g.definition)?;
                let rec = super::index::GraphRec { kelf: self.by, name, definition };
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
                names(entry, &mut |name| self.name(row.kind, name))?;
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

    fn collect(&mut self, space: NameSpace, name: &str) -> Result<(), ErrorKind> {
        let at = self.arena.alloc_top(FINGERPRINT)?;
        self.arena.write(at, &fingerprint(space, name).to_le_bytes());
        Ok(())
    }

    fn reference(&mut self, key: RefKey, name: &str, at: &EntryAt<'_>) -> Result<(), DocFault> {
        if let Some(names) = self.dma_names {
            if names.contains(self.arena, fingerprint(key.space(), name)) {
                return Ok(());
            }
            return Err(at.error(ErrorKind::Manifest(key.unresolved(name))).about(key.key()));
        }
        let fail = |k| at.error(k);
        let path = self.arena.push_str(at.key_path()).map_err(fail)?;
        let name = self.arena.push_str(name).map_err(fail)?;
        let rec = DmaRefRec { by: self.by, key, offset: at.offset(), path, name };
        self.index.dma_refs.push(self.arena, &rec).map_err(fail)?;
        Ok(())
    }
}

impl<O: Observer> Visitor for Recorder<'_, '_, O> {
    fn entry(&mut self, entry: Entry<'_>, at: &EntryAt<'_>) -> Result<(), DocFault> {
        self.record(&entry).map_err(|k| at.error(k))?;
        self.dma(&entry, at)?;
        self.observer.entry(self.member, &entry);
        Ok(())
    }

    fn failed(&mut self, member: &str, path: Option<&str>, key: Option<&'static str>) {
        self.whole.note(member, path, key);
    }
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
/// [`Loader::parse`], the four tiers' parser state would all be reserved in its frame,
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
/// the tokenizer's view of it. Out of line: its temporaries stay out of [`Loader::parse`].
#[cold]
#[inline(never)]
fn archive_error(e: &mut Error, inner: &Error, name: &str) {
    *e = inner.with_member(name);
}

/// What a definition adds to the index once it is read: its extension record (file
/// variables, carveout facts), after the observer has seen it. A frame of its own, entered
/// after the parse: in [`Loader::parse`] it would hold its stack under the whole parse.
#[inline(never)]
fn record_def<O: Observer>(
    recorder: &mut Recorder<'_, '_, O>,
    doc: &crate::manifest::DefJson,
    facts: &crate::manifest::def::DefFacts,
    pos: u32,
    name: &str,
) -> Result<(), Error> {
    recorder.observer.manifest(name, Manifest::Def(doc, facts));
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
            recorder.name(row.kind, named).map_err(|k| Error::in_member(stage, name, end, k))?;
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

impl Loader<'_> {
    /// The pass over the members.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    pub(super) fn walk<R: BufRead, H: Hal, S: WarningSink>(
        &mut self,
        archive: &mut Archive<R>,
        hal: &mut H,
        report: &mut LoadReport,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        while let Some(mut member) = archive.next_member(sink)? {
            // Borrowed from the walker, not copied: a copy (`MEMBER_PATH`, 1 KiB on a
            // controller) would sit in this frame under every member's read.
            let name = member.name();
            if is_debug(name) {
                continue;
            }
            let size = member.size();
            let starts_object = starts_object(&mut member)?;
            match self.route(name, starts_object) {
                Route::Manifest(kind) => {
                    report.manifests = report.manifests.saturating_add(1);
                    self.read_manifest(kind, name, &mut member, observer, sink)?;
                    self.settle_replays(observer, sink)?;
                    self.release_manifest_copies(hal)?;
                }
                Route::Payload => {
                    report.payloads = report.payloads.saturating_add(1);
                    self.read_payload(name, size, report.payloads, false, &mut member, hal, sink)?;
                }
                Route::Metadata => {
                    // Counted as a payload only if the chain makes it one (as a member read
                    // both ways): its sequence number is the next one.
                    let seq = report.payloads.saturating_add(1);
                    self.read_payload(name, size, seq, true, &mut member, hal, sink)?;
                }
                Route::Either(kind) => {
                    report.manifests = report.manifests.saturating_add(1);
                    // Its payload sequence number is the next one; it counts as a payload only
                    // if the chain gives it a payload role (the report counts what it places).
                    let seq = report.payloads.saturating_add(1);
                    self.read_either(kind, name, size, seq, &mut member, hal, observer, sink)?;
                    self.settle_replays(observer, sink)?;
                    self.release_manifest_copies(hal)?;
                }
            }
        }
        Ok(())
    }

    /// What a member is: what the manifests read so far name it as, else what it may be.
    /// `starts_object`: its first bytes open a JSON object (every manifest is one).
    fn route(&self, name: &str, starts_object: bool) -> Route {
        if name == "neff.json" || name == "kelp.json" {
            return Route::Manifest(ManifestKind::Neff);
        }
        if let Some(kind) = self.index.named_as(&self.arena, name) {
            return Route::Manifest(kind);
        }
        let json_name = name.ends_with(".json");
        if !json_name && !starts_object {
            return Route::Payload;
        }
        if self.role_of(name).is_some() {
            return Route::Payload;
        }
        let file = name.get(dir_of(name).len()..).unwrap_or(name).trim_start_matches('/');
        if json_name && METADATA_NAMES.contains(&file) {
            return Route::Metadata;
        }
        Route::Either(guess(name))
    }

    /// Settles each member waiting in the replay store that the manifests read so far name:
    /// named as the kind it was read as, or as a payload, its first reading stands; named as
    /// another kind, it is read again as that kind. Either way its bytes leave the store.
    /// Repeats while a new reading names more.
    #[inline]
    fn settle_replays<S: WarningSink>(
        &mut self,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        if self.index.replays.is_empty() {
            return Ok(());
        }
        self.settle_waiting(observer, sink)
    }

    /// [`Self::settle_replays`] with members waiting.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    fn settle_waiting<S: WarningSink>(
        &mut self,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        loop {
            let mut again = false;
            let mut pos = self.index.replays.first();
            while pos != NIL {
                let next = crate::arena::List::<ReplayRec>::next_after(&self.arena, pos);
                let rec = self.index.replays.get(&self.arena, pos);
                let mut name: heapless::String<MEMBER_PATH> = heapless::String::new();
                let _ = name.push_str(self.arena.str(rec.member));
                let named = self.index.named_as(&self.arena, &name);
                if named.is_none() && self.role_of(&name).is_none() {
                    pos = next;
                    continue;
                }
                if let Some(kind) = named.filter(|k| *k != rec.kind) {
                    self.reread(&rec, kind, &name, observer, sink)?;
                    again = true;
                }
                self.drop_replay(pos, &rec);
                pos = next;
            }
            if !again {
                return Ok(());
            }
        }
    }

    /// Reads a member again from the replay store as `kind` (or, when its bytes did not fit,
    /// records that reading as failed for want of room).
    fn reread<S: WarningSink>(
        &mut self,
        rec: &ReplayRec,
        kind: ManifestKind,
        name: &str,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        if rec.lost {
            let stage = kind.stage();
            let e = Error::about_member(stage, name, replay_capacity(self.replay.len()));
            self.supersede(name);
            let member = push_str(&mut self.arena, name, stage, name)?;
            let mut failed = ManifestRec::new(member, kind);
            failed.failed = Some(self.deferred.keep(e));
            self.index.manifests.push(&mut self.arena, &failed).map_err(|k| Error::about_member(stage, name, k))?;
            return Ok(());
        }
        let replay = core::mem::take(&mut self.replay);
        let start = usize::try_from(rec.at).unwrap_or(usize::MAX);
        let end = start.saturating_add(usize::try_from(rec.len).unwrap_or(usize::MAX));
        let mut body = Replayed(replay.get(start..end).unwrap_or_default());
        let read = self.read_manifest_as(kind, name, &mut body, true, observer, sink);
        self.replay = replay;
        read
    }

    /// Removes a settled member from the replay store, closing the gap its bytes leave.
    fn drop_replay(&mut self, pos: u32, rec: &ReplayRec) {
        let (at, len) = (usize::try_from(rec.at).unwrap_or(0), usize::try_from(rec.len).unwrap_or(0));
        if at.checked_add(len).is_some_and(|end| end <= self.replay_used) && len != 0 {
            // The bytes after it move down over it.
            if let Some(tail) = self.replay.get_mut(at..self.replay_used) {
                // `len <= tail.len()` (`end <= replay_used`); the `min` lets the compiler see it.
                let gap = len.min(tail.len());
                crate::arena::move_down(tail, gap);
            }
            self.replay_used = self.replay_used.saturating_sub(len);
            let mut p = self.index.replays.first();
            while p != NIL {
                let next = crate::arena::List::<ReplayRec>::next_after(&self.arena, p);
                let mut later = self.index.replays.get(&self.arena, p);
                if later.at > rec.at && !later.lost {
                    later.at = later.at.saturating_sub(rec.len);
                    self.index.replays.set(&mut self.arena, p, &later);
                }
                p = next;
            }
        }
        self.index.replays.unlink(&mut self.arena, pos);
    }

    /// Releases the staged copy of each member read both ways that a manifest now names as a
    /// manifest: the device holds those bytes only while the member's kind is open.
    fn release_manifest_copies<H: Hal>(&mut self, hal: &mut H) -> Result<(), Error> {
        if self.either_staged == 0 {
            return Ok(());
        }
        let mut pos = self.index.payloads.first();
        while pos != NIL {
            let next = crate::arena::List::<PayloadRec>::next_after(&self.arena, pos);
            let p = self.index.payloads.get(&self.arena, pos);
            let member = self.arena.str(p.member);
            // Kept: not released.
            if p.quiet && p.kept && self.index.named_as(&self.arena, member).is_some() {
                let landing = self.index.landings.get(hal, &self.arena, p.landed);
                let region = landing.map_err(|k| Error::about_member(Stage::Hal, member, k))?.region;
                if region != NIL {
                    hal.release(RegionId(region)).map_err(|e| hal_error(member, None, e))?;
                    // A manifest now, never a payload to place or report: its record and its
                    // landing leave for good.
                    self.index.drop_payload(&mut self.arena, pos);
                    let forgotten = self.index.landings.forget(hal, &mut self.arena, p.landed);
                    forgotten.map_err(|k| Error::about_member(Stage::Hal, self.arena.str(p.member), k))?;
                    self.either_staged = self.either_staged.saturating_sub(1);
                }
            }
            pos = next;
        }
        Ok(())
    }

    /// Reads a member nothing names yet both ways at once: as a manifest of `kind`, while
    /// every byte the parser consumes (and the rest after it) streams into a staging region,
    /// as a payload met before its `def.json` would.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn read_either<B: BufRead<Error = Error>, H: Hal, S: WarningSink>(
        &mut self,
        kind: ManifestKind,
        name: &str,
        member_len: u64,
        seq: u32,
        body: &mut B,
        hal: &mut H,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        let region = self.open_either(name, member_len, hal, sink)?;
        // The replay store is lent to the tee while the loader reads the member.
        let replay = core::mem::take(&mut self.replay);
        let window = replay.get_mut(self.replay_used..).unwrap_or_default();
        let mut digest = Digest64::new();
        let mut tee = Tee {
            inner: body,
            hal: &mut *hal,
            region,
            written: 0,
            digest: &mut digest,
            hal_error: None,
            lost_bytes: false,
            replay: window,
            kept: 0,
            overflow: false,
        };
        let mut read = self.read_manifest(kind, name, &mut tee, observer, sink);
        if read.is_ok() {
            tee.drain(&mut read);
        }
        let teed = Teed {
            written: tee.written,
            digest: tee.digest.finish(),
            hal_error: tee.hal_error,
            lost_bytes: tee.lost_bytes,
            kept: tee.kept,
            lost: tee.overflow,
        };
        self.replay = replay;
        // One slot for the outcome, settled in place and returned as it is.
        self.close_either(kind, name, seq, region, &mut read, &teed, hal);
        read
    }

    /// The start of a member read both ways: releases an earlier copy (with a warning) and
    /// allocates the staging region. A frame of its own, as [`Self::close_either`] is: their
    /// locals would otherwise stay reserved in [`Self::read_either`]'s frame under the parse.
    #[inline(never)]
    fn open_either<H: Hal, S: WarningSink>(
        &mut self,
        name: &str,
        member_len: u64,
        hal: &mut H,
        sink: &mut Counting<'_, S>,
    ) -> Result<Option<RegionId>, Error> {
        if self.release_earlier(name, hal)? {
            sink.warn(&Warning::about_member(Stage::Payload, name, WarningKind::Chain(ChainWarning::DuplicateMember)));
        }
        match member_len {
            0 => Ok(None),
            size => {
                let req = AllocRequest { size, ..AllocRequest::staging(size, 0) };
                Ok(Some(hal.alloc(&req).map_err(|e| hal_error(name, None, e))?))
            }
        }
    }

    /// The end of a member read both ways (`read`: the manifest read's outcome; `teed`: what
    /// the tee saw): keeps its bytes for a second reading when they fit, and records its
    /// staged copy as a payload that nothing names yet.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn close_either<H: Hal>(
        &mut self,
        kind: ManifestKind,
        name: &str,
        seq: u32,
        region: Option<RegionId>,
        read: &mut Result<(), Error>,
        teed: &Teed,
        hal: &mut H,
    ) {
        let outcome = core::mem::replace(read, Ok(()));
        *read = self.settle_either(kind, name, seq, region, outcome, teed, hal);
    }

    /// [`Self::close_either`], with the read's outcome by value.
    #[allow(clippy::too_many_arguments)]
    fn settle_either<H: Hal>(
        &mut self,
        kind: ManifestKind,
        name: &str,
        seq: u32,
        region: Option<RegionId>,
        read: Result<(), Error>,
        teed: &Teed,
        hal: &mut H,
    ) -> Result<(), Error> {
        // A later copy of the member wins: an earlier one waiting in the store is never read
        // again, and left there it would be asked after at every manifest that follows.
        let earlier = self.index.replays.iter(&self.arena).find(|(_, r)| self.arena.eq(r.member, name));
        if let Some((pos, rec)) = earlier {
            self.drop_replay(pos, &rec);
        }
        let fail = |k: ErrorKind| Error::about_member(Stage::Payload, name, k);
        let (written, digest, kept, lost) = (teed.written, teed.digest, teed.kept, teed.lost);
        // Kept for a second reading when it fit (a member that did not, or a loader lent no
        // replay store, has only its first: named as another kind, the binder refuses it).
        let member = self.index.manifest(&self.arena, name).map(|(_, r)| r.member);
        if let (true, true, false, Some(member)) = (read.is_ok(), teed.complete(), lost, member) {
            let fail = |k: ErrorKind| Error::about_member(kind.stage(), name, k);
            let at = u32::try_from(self.replay_used).map_err(|_| fail(replay_capacity(self.replay.len())))?;
            let len = u32::try_from(kept).map_err(|_| fail(replay_capacity(self.replay.len())))?;
            self.index.replays.push(&mut self.arena, &ReplayRec { member, kind, at, len, lost }).map_err(fail)?;
            self.replay_used = self.replay_used.saturating_add(kept);
        }
        let release = |hal: &mut H| {
            if let Some(r) = region {
                let _ = hal.release(r);
            }
        };
        if let Err(e) = read.and(teed.error(name).map_or(Ok(()), Err)) {
            release(hal);
            return Err(e);
        }
        let keeps = !hal.keeps_nothing();
        let state = if keeps { PayloadState::Staged } else { PayloadState::Checked };
        let landing = Landing {
            seq,
            state: state.code(),
            usage: usage_code(UsageClass::Generic),
            core: u8::MAX,
            region: region.filter(|_| keeps).map_or(NIL, |r| r.0),
            len: written,
            header_len: 0,
            digest,
        };
        // The manifest record's copy of the name serves the payload record too.
        let stored = match member {
            Some(member) => Ok(member),
            None => self.arena.push_str(name),
        }
        .and_then(|member| {
            let landed = self.index.landings.keep(hal, &mut self.arena, &landing)?;
            let rec = PayloadRec { member, landed, kept: landing.is_kept(), quiet: true, failed: None };
            self.index.push_payload(&mut self.arena, &rec)
        });
        if let Err(k) = stored {
            release(hal);
            return Err(fail(k));
        }
        if landing.region != NIL {
            self.either_staged = self.either_staged.saturating_add(1);
        }
        Ok(())
    }

    /// Reads one manifest member as `kind`. Its outcome is recorded; an error is returned only
    /// when it ends the load (the archive failed, the arena is full, `neff.json` is bad).
    #[inline]
    fn read_manifest<B: BufRead<Error = Error>, S: WarningSink>(
        &mut self,
        kind: ManifestKind,
        name: &str,
        body: &mut B,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        self.read_manifest_as(kind, name, body, false, observer, sink)
    }

    /// [`Self::read_manifest`]; `rereading`: the member is read again from the replay store
    /// as the kind the chain names it as, replacing its first reading (no duplicate).
    ///
    /// The body is a trait object: a member comes from the archive, through the tee, or from
    /// the replay store, and one copy of the parsers serves all three (flash on a controller).
    #[inline(never)]
    fn read_manifest_as<S: WarningSink>(
        &mut self,
        kind: ManifestKind,
        name: &str,
        mut body: &mut dyn BufRead<Error = Error>,
        rereading: bool,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        let pos = self.open_manifest(kind, name, rereading, sink)?;
        let names_mark = self.arena.mark_top();
        // One slot for the outcome, settled in place and returned as it is.
        let mut outcome = self.parse(kind, pos, name, &mut body, observer, sink);
        self.close_manifest(kind, pos, name, names_mark, &mut outcome);
        outcome
    }

    /// The start of a manifest read: supersedes an earlier reading of `name` (a warning unless
    /// `rereading`) and adds its record, returning the record's position. A frame of its own,
    /// as [`Self::close_manifest`] is: their locals would otherwise stay reserved in
    /// [`Self::read_manifest_as`]'s frame under the whole parse.
    #[inline(never)]
    fn open_manifest<S: WarningSink>(
        &mut self,
        kind: ManifestKind,
        name: &str,
        rereading: bool,
        sink: &mut Counting<'_, S>,
    ) -> Result<u32, Error> {
        let stage = kind.stage();
        if self.supersede(name) && !rereading {
            // The later copy wins, as in the runtime's member map.
            sink.warn(&Warning::about_member(stage, name, WarningKind::Chain(ChainWarning::DuplicateMember)));
        }
        let member = push_str(&mut self.arena, name, stage, name)?;
        let pos = self
            .index
            .manifests
            .push(&mut self.arena, &ManifestRec::new(member, kind))
            .map_err(|k| Error::about_member(stage, name, k))?;
        if kind == ManifestKind::Neff {
            // A second neff.json replaces what the first one named.
            self.index.kelf_names = Default::default();
        }
        Ok(pos)
    }

    /// The end of a manifest read (record `pos`, names collected since `names_mark`), its
    /// `outcome` settled in place: settles a definition's DMA names, keeps a failed read's
    /// error for the chain (the outcome is then `Ok`) unless it ends the load, and fills the
    /// record from the scratch document.
    #[inline(never)]
    fn close_manifest(
        &mut self,
        kind: ManifestKind,
        pos: u32,
        name: &str,
        names_mark: usize,
        outcome: &mut Result<(), Error>,
    ) {
        if outcome.is_ok() && kind == ManifestKind::Def {
            *outcome = self.settle_dma_names(pos, name, names_mark);
        }
        // What the definition collected and did not keep.
        self.arena.release_top(names_mark);
        let mut rec = self.index.manifests.get(&self.arena, pos);
        if let Err(e) = outcome {
            if is_fatal(e) || kind == ManifestKind::Neff {
                return;
            }
            rec.failed = Some(self.deferred.keep(*e));
        }
        *outcome = self.fill_record(pos, &mut rec, name);
        if outcome.is_err() {
            return;
        }
        self.index.manifests.set(&mut self.arena, pos, &rec);
        if kind == ManifestKind::Neff && rec.failed.is_none() {
            self.index.neff = Some(pos);
        }
    }

    /// Marks the current record of `name` replaced, freeing its deferred error's slot.
    fn supersede(&mut self, name: &str) -> bool {
        if let Some(slot) = self.index.manifest(&self.arena, name).and_then(|(_, r)| r.failed) {
            self.deferred.free(slot);
        }
        self.index.supersede_manifest(&mut self.arena, name)
    }

    /// Marks the manifest read at record `pos` as failed with `e` (found after its read).
    fn fail_manifest(&mut self, pos: u32, e: Error) {
        let mut rec = self.index.manifests.get(&self.arena, pos);
        rec.failed = Some(self.deferred.keep(e));
        self.index.manifests.set(&mut self.arena, pos, &rec);
    }

    /// One generic read-a-document step: parse the body into the scratch slot of `kind`, with
    /// the recorder as visitor.
    // A frame of its own: the stack is the deepest path, not the sum of the stages.
    #[inline(never)]
    fn parse<B: BufRead<Error = Error>, S: WarningSink>(
        &mut self,
        kind: ManifestKind,
        pos: u32,
        name: &str,
        body: &mut B,
        observer: &mut impl Observer,
        sink: &mut Counting<'_, S>,
    ) -> Result<(), Error> {
        self.reset_scratch(kind);
        // Only the definition being read records file variables here.
        self.index.reading_vars = List::new();
        let join = (kind == ManifestKind::Neff).then(|| IoJoin::new(&self.arena));
        let dma_names = match kind {
            ManifestKind::Engine => self.index.dir_names(&self.arena, dir_of(name)),
            _ => None,
        };
        let mut recorder = Recorder {
            arena: &mut self.arena,
            index: &mut self.index,
            observer,
            member: name,
            by: pos,
            kind,
            join,
            dma_names,
            whole: &mut self.whole,
        };
        let mut src = Capture { inner: body, error: None };
        let tok = &mut self.tok;
        let kelf_mark = &mut self.kelf_mark;
        let mut result = match &mut self.scratch {
            Scratch::Neff(doc) => parse_doc(doc, tok, &mut src, name, sink, &mut recorder, |_, facts, _| {
                *kelf_mark = facts.kelf_mark();
                Ok(())
            }),
            Scratch::Kelf(doc) => parse_doc(doc, tok, &mut src, name, sink, &mut recorder, |_, _, _| Ok(())),
            Scratch::Def(doc) => {
                let mut sink = NamingNeff { inner: &mut *sink, neff: self.neff_name.as_str() };
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
            result = conclude(&self.scratch, &mut recorder, name, end, sink, &mut self.io_counts);
        }
        result
    }

    /// Empties the scratch slot as a document of `kind`. A frame of its own: the new value is
    /// built on the stack (3 KiB for a `def.json`) and copied in, and that temporary must not
    /// stay reserved in [`Self::parse`]'s frame, which is live under the whole parse.
    #[inline(never)]
    fn reset_scratch(&mut self, kind: ManifestKind) {
        self.scratch = match kind {
            ManifestKind::Neff => Scratch::Neff(Default::default()),
            ManifestKind::Kelf => Scratch::Kelf(Default::default()),
            ManifestKind::Def => Scratch::Def(Default::default()),
            ManifestKind::Engine => Scratch::Engine(Default::default()),
        };
    }

    /// Copies what binding needs of the scratch document into its record (at `pos`).
    fn fill_record(&mut self, pos: u32, rec: &mut ManifestRec, name: &str) -> Result<(), Error> {
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
                let mut ext = self.index.def_ext(&self.arena, rec);
                for engine in crate::manifest::def::ENGINE_KEYS {
                    let slot = engine.slot();
                    if let (Some(dst), Some(json)) = (ext.engines.get_mut(slot), doc.engine_member(engine)) {
                        *dst = self.arena.push_str(json).map_err(fail)?;
                    }
                    if let (Some(dst), Some(instr)) = (ext.engine_instrs.get_mut(slot), doc.engine_stream(engine)) {
                        *dst = self.arena.push_str(instr).map_err(fail)?;
                    }
                }
                if rec.ext == crate::arena::NIL {
                    // It failed to parse: its variables name nothing the chain can reach.
                    ext.def = pos;
                    rec.ext = self.index.def_exts.push(&mut self.arena, &ext).map_err(fail)?;
                } else {
                    self.index.def_exts.set(&mut self.arena, rec.ext, &ext);
                }
            }
            Scratch::Engine(doc) => {
                if let Some(instr) = &doc.instr {
                    rec.instr = self.arena.push_str(instr).map_err(fail)?;
                    rec.has_instr = true;
                }
            }
            Scratch::Neff(_) | Scratch::Empty => {}
        }
        Ok(())
    }
}

// DMA names (spec §8.2, `dma.rs`) at the end of a definition.
impl Loader<'_> {
    /// The end of a definition read (member `member`, record `pos`): its names, collected in
    /// the arena's scratch since `mark`, are sorted; every reference waiting for this
    /// directory's definition is checked and let go (an engine JSON's first unresolved one
    /// becomes that member's error, kept until the chain reaches it; the definition's own is
    /// its error, returned); the names are kept if an engine JSON the definition names is
    /// still to come.
    fn settle_dma_names(&mut self, pos: u32, member: &str, mark: usize) -> Result<(), Error> {
        let scratch = self.arena.top_since_mut(mark);
        sort_fingerprints(scratch);
        let count = u32::try_from(scratch.len() / FINGERPRINT).unwrap_or(u32::MAX);
        let names = NameTable { at: u32::try_from(self.arena.mark_top()).unwrap_or(u32::MAX), count };
        let dir = dir_of(member);
        let mut own = None;
        let mut at = self.index.dma_refs.first();
        for _ in 0..self.index.dma_refs.len() {
            if at == NIL {
                break;
            }
            let next = List::<DmaRefRec>::next_after(&self.arena, at);
            let mut r = self.index.dma_refs.get(&self.arena, at);
            let by = self.index.manifests.get(&self.arena, r.by);
            let in_dir = by.kind == ManifestKind::Engine && dir_of(self.arena.str(by.member)) == dir;
            if r.by == pos || in_dir {
                if !names.contains(&self.arena, fingerprint(r.key.space(), self.arena.str(r.name))) {
                    if r.by == pos {
                        own = own.or_else(|| Some(r.error(&self.arena, Stage::DefJson, member)));
                    } else if by.failed.is_none() {
                        let e = r.error(&self.arena, Stage::Engine, self.arena.str(by.member));
                        self.fail_manifest(r.by, e);
                    }
                }
                r.by = NIL;
                self.index.dma_refs.set(&mut self.arena, at, &r);
            }
            at = next;
        }
        self.index.dma_refs.retain(&mut self.arena, |r| r.by != NIL);
        if self.engine_to_come(dir) {
            let at = self.arena.keep_top(mark);
            let rec = self.index.manifests.get(&self.arena, pos);
            if rec.ext != NIL {
                let mut ext = self.index.def_exts.get(&self.arena, rec.ext);
                ext.names = Some(NameTable { at, count });
                self.index.def_exts.set(&mut self.arena, rec.ext, &ext);
            }
        }
        own.map_or(Ok(()), Err)
    }

    /// Whether the definition just read (in the scratch slot) names an engine JSON of `dir`
    /// that has not been read yet.
    fn engine_to_come(&self, dir: &str) -> bool {
        let super::Scratch::Def(doc) = &self.scratch else {
            return false;
        };
        ENGINE_KEYS.into_iter().filter_map(|e| doc.engine_member(e)).any(|json| {
            !self
                .index
                .manifests
                .iter(&self.arena)
                .any(|(_, m)| !m.superseded && is_joined(self.arena.str(m.member), dir, json))
        })
    }
}
