//! `neff_info`: the `neff info --json` document (spec `cli-contract.md`) written into a
//! caller's buffer, from one check of the NEFF.
//!
//! The document's order is not the tar's: `neff.json`, which says which KELFs make the chain,
//! comes last; vars print by `var_id` and queues by name. So what the manifests stream is
//! logged in the caller's work buffer as it comes (`Work`), as the host command collects it
//! (`targets/host/src/loading/collected.rs`, `Collected`): a manifest's entries wait until the manifest
//! itself is read (a member read and refused leaves nothing behind), and a later copy of a
//! member is the one shown. `info.json`'s bytes, which the loader skips, are kept at the top of
//! the same buffer by the tar tap (`crate::tap`). Once the check succeeds, the document is
//! written from the log; the sorting takes an index of 4 bytes per var or queue from the free
//! middle of the work buffer. A work buffer that is too small is `NEFF_STATUS_RESOURCE` naming
//! it with the bytes needed, an output buffer that is too small `NEFF_STATUS_BUFFER_TOO_SMALL`
//! with the document's exact size: nothing is ever cut short.

use core::cell::RefCell;

use neff::archive::{Archive, Container, OpenOptions};
use neff::gzip::MinizInflater;
use neff::header::{Integrity, NeffHeader};
use neff::json::{Event, TokenKind, Tokenizer};
use neff::loader::{
    dir_of_bytes, is_joined_bytes, LoadOptions, LoadReport, Loader, Manifest, Observer, PayloadReport, Storage,
};
use neff::manifest::def::ENGINE_KEYS;
use neff::manifest::{Arch, Entry, IoKind, IoTensor};
use neff::Error;

use crate::json::Out;
use crate::tap::{Keep, Tap};
use crate::{CObserver, Lent, BUILTIN_ARENA};

/// The caller's work buffer: the log grows from the front, `info.json` sits at the top.
pub(crate) struct Work<'b> {
    buf: &'b mut [u8],
    /// End of the log as if every record had fit.
    front: usize,
    /// Start of the kept `info.json` (`buf.len()` when none).
    top: usize,
    /// Bytes of `info.json` copied so far.
    captured: usize,
    /// Bytes `info.json` takes (its declared size while it streams).
    reserved: usize,
    /// Whether `info.json` was kept whole.
    have_info: bool,
    /// A record or `info.json` did not fit: the log is incomplete.
    overflow: bool,
    /// The most bytes the log and `info.json` took at once, fitting or not.
    peak: usize,
    /// Vars and queues of the group being logged, and the most of either in one group: the
    /// sorting index takes 4 bytes each.
    in_group: (usize, usize),
    most_in_group: usize,
    /// Once the log overflowed, what the records it could not read would take: the
    /// instruction paths (each engine slot of each `def.json`: the directory and its
    /// `<eng>_instr`, or at most the longest engine `instr`) and every payload.
    bound: Bound,
}

/// See `Work::bound`.
#[derive(Default)]
struct Bound {
    slots: usize,
    fixed: usize,
    longest_instr: usize,
    payloads: usize,
}

impl<'b> Work<'b> {
    pub(crate) fn new(buf: &'b mut [u8]) -> Self {
        let top = buf.len();
        Self {
            buf,
            front: 0,
            top,
            captured: 0,
            reserved: 0,
            have_info: false,
            overflow: false,
            peak: 0,
            in_group: (0, 0),
            most_in_group: 0,
            bound: Bound::default(),
        }
    }

    fn note_peak(&mut self) {
        self.peak = self.peak.max(self.front.saturating_add(self.reserved));
    }

    /// Appends a record: `tag`, the body's length, `fixed`, then each of `strs` with its length.
    fn push(&mut self, tag: u8, fixed: &[u8], strs: &[&[u8]]) {
        let body = strs.iter().fold(fixed.len(), |n, s| n.saturating_add(4).saturating_add(s.len()));
        match tag {
            GROUP => self.in_group = (0, 0),
            VAR => self.in_group.0 = self.in_group.0.saturating_add(1),
            QUEUE => self.in_group.1 = self.in_group.1.saturating_add(1),
            _ => {}
        }
        self.most_in_group = self.most_in_group.max(self.in_group.0).max(self.in_group.1);
        let start = self.front;
        let end = start.saturating_add(5).saturating_add(body);
        self.front = end;
        self.note_peak();
        if self.overflow || end > self.top || u32::try_from(body).is_err() {
            self.overflow = true;
            return;
        }
        let Some(out) = self.buf.get_mut(start..end) else { return };
        let mut w = Cursor { out, at: 0 };
        w.put(&[tag]);
        w.put(&(body as u32).to_le_bytes());
        w.put(fixed);
        for s in strs {
            w.put(&(s.len() as u32).to_le_bytes());
            w.put(s);
        }
    }

    /// Drops the records from `at` on.
    fn truncate(&mut self, at: usize) {
        self.front = self.front.min(at);
    }

    /// The bytes of the last `info.json` kept whole.
    #[cfg(test)]
    pub(crate) fn kept_info(&self) -> Option<&[u8]> {
        self.buf.get(self.top..).filter(|_| self.have_info)
    }
}

impl Keep for Work<'_> {
    fn begin_capture(&mut self, size: u64) {
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        self.reserved = size;
        self.captured = 0;
        self.have_info = false;
        self.note_peak();
        match self.buf.len().checked_sub(size) {
            Some(top) if !self.overflow && top >= self.front => self.top = top,
            _ => self.overflow = true,
        }
    }

    fn capture(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        let at = self.top.saturating_add(self.captured);
        if let Some(dst) = self.buf.get_mut(at..at.saturating_add(bytes.len())) {
            dst.copy_from_slice(bytes);
            self.captured = self.captured.saturating_add(bytes.len());
        }
    }

    fn end_capture(&mut self) {
        self.have_info = !self.overflow && self.captured == self.reserved;
    }
}

/// Writes into a record's bytes, which were sized for what is put.
struct Cursor<'a> {
    out: &'a mut [u8],
    at: usize,
}

impl Cursor<'_> {
    fn put(&mut self, bytes: &[u8]) {
        let end = self.at.saturating_add(bytes.len());
        if let Some(dst) = self.out.get_mut(self.at..end) {
            dst.copy_from_slice(bytes);
        }
        self.at = end;
    }
}

// Record tags.
const GROUP: u8 = 1;
const COMMIT: u8 = 2;
const VAR: u8 = 3;
const QUEUE: u8 = 4;
const CARVEOUT: u8 = 5;
const GRAPH: u8 = 6;
const NODE: u8 = 7;
const TENSOR: u8 = 8;
const INSTR: u8 = 9;
const PAYLOAD: u8 = 10;

// Manifest kinds of a `COMMIT`.
const NEFF: u8 = 1;
const KELF: u8 = 2;
const DEF: u8 = 3;
const ENGINE: u8 = 4;

/// A small fixed-size record part being built.
struct Fixed {
    bytes: [u8; 64],
    len: usize,
}

impl Fixed {
    fn new() -> Self {
        Self { bytes: [0; 64], len: 0 }
    }
    fn put(mut self, b: &[u8]) -> Self {
        let end = self.len.saturating_add(b.len());
        if let Some(dst) = self.bytes.get_mut(self.len..end) {
            dst.copy_from_slice(b);
            self.len = end;
        }
        self
    }
    fn u8(self, v: u8) -> Self {
        self.put(&[v])
    }
    fn u32(self, v: u32) -> Self {
        self.put(&v.to_le_bytes())
    }
    fn u64(self, v: u64) -> Self {
        self.put(&v.to_le_bytes())
    }
    fn opt_u32(self, v: Option<u32>) -> Self {
        self.u8(u8::from(v.is_some())).u32(v.unwrap_or(0))
    }
    fn opt_u64(self, v: Option<u64>) -> Self {
        self.u8(u8::from(v.is_some())).u64(v.unwrap_or(0))
    }
    fn as_slice(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[])
    }
}

/// An optional string as a presence byte (in the fixed part) and its text.
fn opt_str(s: Option<&str>) -> (u8, &[u8]) {
    (u8::from(s.is_some()), s.map_or(&[][..], str::as_bytes))
}

/// The observer of an info pass: logs what the document needs into the work buffer, and
/// passes placements and warnings on to the caller's observer.
pub(crate) struct InfoObserver<'w, 'b> {
    work: &'w RefCell<Work<'b>>,
    c: CObserver,
    /// Start of the group of entries waiting for their manifest, and a hash of its member (the
    /// log cannot be read back once it overflowed; then the hash tells groups apart, for the
    /// size the work buffer needs).
    pending: Option<(usize, u64)>,
    /// The instruction stream paths, logged at the first payload: `(start, end)`.
    instr: Option<(usize, usize)>,
}

impl InfoObserver<'_, '_> {
    /// The group for `member`'s entries: the pending one if it is `member`'s, else a new one
    /// (what another member left pending is dropped).
    fn group(&mut self, work: &mut Work<'_>, member: &str) {
        let hash = fnv1a(member.as_bytes());
        if let Some((start, pending)) = self.pending {
            let same = if work.overflow {
                pending == hash
            } else {
                group_member(work.buf, start, work.front) == Some(member.as_bytes())
            };
            if same {
                return;
            }
            work.truncate(start);
        }
        self.pending = Some((work.front, hash));
        work.push(GROUP, &[], &[member.as_bytes()]);
    }
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The member of the `GROUP` record at `start`, if the log holds it.
fn group_member(log: &[u8], start: usize, front: usize) -> Option<&[u8]> {
    let rec = Records { log: log.get(..front)?, at: start }.next()?;
    (rec.tag == GROUP).then(|| rec.reader().str())?
}

impl Observer for InfoObserver<'_, '_> {
    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        let Ok(mut work) = self.work.try_borrow_mut() else { return };
        let interesting =
            matches!(entry, Entry::Var(_) | Entry::DmaQueue(_) | Entry::Carveout(_) | Entry::Graph(_) | Entry::Node(_));
        if !interesting {
            return;
        }
        self.group(&mut work, member);
        match *entry {
            Entry::Var(v) => {
                let (has_file, file) = opt_str(v.file_name.as_deref());
                let fixed = Fixed::new()
                    .u32(v.var_id)
                    .opt_u32(v.mr_type_value())
                    .opt_u64(v.size)
                    .opt_u64(v.alignment)
                    .opt_u64(v.backing_variable_off)
                    .u8(has_file);
                work.push(VAR, fixed.as_slice(), &[v.name.as_bytes(), v.var_type.as_bytes(), file]);
            }
            Entry::DmaQueue(q) => {
                let (has_owner, owner) = opt_str(q.owner.as_deref());
                let fixed = Fixed::new()
                    .opt_u32(q.ring_type().map(|r| r.value()))
                    .u32(q.num_queues)
                    .u8(has_owner)
                    .u32(q.semaphores().len() as u32);
                // The semaphores as a string of little-endian u32s, after the texts.
                let mut sems = [0u8; 4 * 64];
                let mut n = 0;
                for s in q.semaphores() {
                    if let Some(dst) = sems.get_mut(n..n + 4) {
                        dst.copy_from_slice(&s.to_le_bytes());
                        n += 4;
                    }
                }
                let sems = sems.get(..n).unwrap_or(&[]);
                work.push(QUEUE, fixed.as_slice(), &[q.name.as_bytes(), q.queue_type.as_bytes(), owner, sems]);
            }
            Entry::Carveout(c) => {
                let fixed = Fixed::new().u64(c.offset).u64(c.size).u64(c.start_partition).u64(c.num_partitions);
                work.push(CARVEOUT, fixed.as_slice(), &[c.carveout_type.as_bytes()]);
            }
            Entry::Graph(g) => work.push(GRAPH, &[], &[g.name.as_bytes(), g.definition.as_bytes()]),
            Entry::Node(n) => {
                if let (Some(mark), Some(kelf)) =
                    (neff::manifest::neff::kelf_mark(n), neff::manifest::neff::kelf_member(n))
                {
                    let by_func = u8::from(mark == neff::manifest::KelfMark::FuncName);
                    work.push(NODE, &[by_func], &[kelf.as_bytes()]);
                }
            }
            _ => {}
        }
    }

    fn io_tensor(&mut self, t: &IoTensor<'_>) {
        let Ok(mut work) = self.work.try_borrow_mut() else { return };
        // They belong to the `neff.json` being read (the host's collector keeps them with
        // whatever is pending); with nothing pending, a group of no member, which no manifest
        // takes.
        if self.pending.is_none() {
            self.group(&mut work, "");
        }
        let fixed = Fixed::new().u8(u8::from(t.kind == IoKind::Output)).u32(t.nrt_dtype.value()).u64(t.size);
        let mut shape = [0u8; 4 * 64];
        let mut n = 0;
        for d in t.shape {
            if let Some(dst) = shape.get_mut(n..n + 4) {
                dst.copy_from_slice(&d.to_le_bytes());
                n += 4;
            }
        }
        let shape = shape.get(..n).unwrap_or(&[]);
        work.push(TENSOR, fixed.as_slice(), &[t.name.as_bytes(), t.dtype.as_bytes(), shape]);
    }

    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        let Ok(mut work) = self.work.try_borrow_mut() else { return };
        self.group(&mut work, member);
        self.pending = None;
        match manifest {
            Manifest::Neff(_) => work.push(COMMIT, &[NEFF], &[]),
            Manifest::Kelf(doc) => {
                let (has_target, target) = opt_str(doc.target.as_deref());
                let fixed = Fixed::new().u8(KELF).u8(has_target).opt_u32(doc.arch_value().map(Arch::value));
                work.push(COMMIT, fixed.as_slice(), &[doc.version.as_bytes(), target]);
            }
            Manifest::Def(doc, _) => {
                let (has_version, version) = opt_str(doc.version.as_deref());
                let mut fixed = Fixed::new().u8(DEF).u8(has_version);
                fixed = match doc.fp8_conversion_config.as_ref() {
                    Some(c) => fixed
                        .u8(1)
                        .u8(u8::from(c.fp8_range_extension))
                        .u32(c.emax_fp8_e4m3)
                        .u32(c.emax_fp8_e5m2)
                        .u8(u8::from(c.ocp_sat))
                        .u8(u8::from(c.fp8_sis))
                        .u8(u8::from(c.fp8_sns)),
                    None => fixed.u8(0).u8(0).u32(0).u32(0).u8(0).u8(0).u8(0),
                };
                let mut strs: [&[u8]; 13] = [version; 13];
                let dir = dir_of_bytes(member.as_bytes()).len();
                for (i, &e) in ENGINE_KEYS.iter().enumerate() {
                    let (has_json, json) = opt_str(doc.engine_member(e));
                    let (has_stream, stream) = opt_str(doc.engine_stream(e));
                    if has_json != 0 {
                        let b = &mut work.bound;
                        b.slots = b.slots.saturating_add(1);
                        b.fixed = b.fixed.saturating_add(13 + dir).saturating_add(stream.len());
                    }
                    fixed = fixed.u8(has_json).u8(has_stream);
                    if let Some(slot) = strs.get_mut(1 + 2 * i..3 + 2 * i) {
                        slot.copy_from_slice(&[json, stream]);
                    }
                }
                work.push(COMMIT, fixed.as_slice(), &strs);
            }
            Manifest::Engine(doc) => {
                let (has_instr, instr) = opt_str(doc.instr.as_deref());
                work.bound.longest_instr = work.bound.longest_instr.max(instr.len());
                work.push(COMMIT, &[ENGINE, has_instr], &[instr]);
            }
        }
    }

    fn payload(&mut self, p: &PayloadReport<'_>) {
        self.c.payload(p);
        let Ok(mut work) = self.work.try_borrow_mut() else { return };
        work.bound.payloads = work.bound.payloads.saturating_add(17 + 4 + p.member.len());
        // The chain is bound: every manifest has been read. What waits for one now never gets it.
        if let Some((start, _)) = self.pending.take() {
            work.truncate(start);
        }
        let (start, end) = match self.instr {
            Some(span) => span,
            None => {
                let start = work.front;
                log_instr_paths(&mut work);
                let span = (start, work.front);
                self.instr = Some(span);
                span
            }
        };
        if work.overflow {
            return;
        }
        let log = work.buf.get(..end).unwrap_or(&[]);
        let named = Records { log, at: start }.any(|r| {
            let mut r = r.reader();
            matches!((r.str(), r.str()), (Some(dir), Some(name)) if is_joined_bytes(p.member.as_bytes(), dir, name))
        });
        if named {
            let fixed = Fixed::new().u32(p.seq).u64(p.member_len);
            work.push(PAYLOAD, fixed.as_slice(), &[p.member.as_bytes()]);
        }
    }

    fn subgraph(&mut self, s: &neff::loader::SubgraphReport<'_>) {
        self.c.subgraph(s);
    }
}

/// One record of the log.
#[derive(Clone, Copy)]
struct Rec<'a> {
    tag: u8,
    at: usize,
    body: &'a [u8],
}

impl<'a> Rec<'a> {
    fn reader(&self) -> Fields<'a> {
        Fields { body: self.body }
    }
}

/// The records of a log from `at` on.
#[derive(Clone)]
struct Records<'a> {
    log: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Records<'a> {
    type Item = Rec<'a>;
    fn next(&mut self) -> Option<Rec<'a>> {
        let head = self.log.get(self.at..self.at.checked_add(5)?)?;
        let (&tag, len) = head.split_first()?;
        let len = u32::from_le_bytes(len.try_into().ok()?) as usize;
        let start = self.at.checked_add(5)?;
        let body = self.log.get(start..start.checked_add(len)?)?;
        let rec = Rec { tag, at: self.at, body };
        self.at = start.checked_add(len)?;
        Some(rec)
    }
}

/// Reads a record's fields in the order they were put.
struct Fields<'a> {
    body: &'a [u8],
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.body.len() < n {
            return None;
        }
        let (head, rest) = self.body.split_at(n);
        self.body = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn opt_u32(&mut self) -> Option<Option<u32>> {
        let has = self.u8()? != 0;
        let v = self.u32()?;
        Some(has.then_some(v))
    }
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        let has = self.u8()? != 0;
        let v = self.u64()?;
        Some(has.then_some(v))
    }
    fn str(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }
}

/// A committed manifest: its group's records and the `COMMIT` record.
#[derive(Clone, Copy)]
struct Group<'a> {
    start: usize,
    member: &'a [u8],
    commit: Rec<'a>,
}

/// Every committed manifest of the log, in order.
fn groups(log: &[u8]) -> impl Iterator<Item = Group<'_>> {
    let mut open: Option<(usize, &[u8])> = None;
    Records { log, at: 0 }.filter_map(move |r| match r.tag {
        GROUP => {
            open = r.reader().str().map(|m| (r.at, m));
            None
        }
        COMMIT => open.take().map(|(start, member)| Group { start, member, commit: r }),
        _ => None,
    })
}

/// The last committed manifest of `kind` (and `member`, when given): a later copy wins.
fn last<'a>(log: &'a [u8], kind: u8, member: Option<&[u8]>) -> Option<Group<'a>> {
    groups(log).filter(|g| g.commit.body.first() == Some(&kind) && member.is_none_or(|m| m == g.member)).last()
}

/// The entry records of a group, in order.
fn entries<'a>(log: &'a [u8], g: &Group<'a>) -> impl Iterator<Item = Rec<'a>> {
    Records { log, at: g.start }.skip(1).take_while(|r| r.tag != COMMIT)
}

/// An engine slot of a `def.json`: its engine JSON and the stream `def.json` names.
type EngineSlot<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A `def.json`'s commit, read.
struct DefView<'a> {
    version: Option<&'a [u8]>,
    fp8: Option<(bool, u32, u32, bool, bool, bool)>,
    /// Per engine slot: its JSON and the stream `def.json` names.
    engines: [EngineSlot<'a>; 6],
}

fn def_view<'a>(g: &Group<'a>) -> Option<DefView<'a>> {
    let mut f = g.commit.reader();
    let _kind = f.u8()?;
    let has_version = f.u8()? != 0;
    let has_fp8 = f.u8()? != 0;
    let fp8 = (f.u8()? != 0, f.u32()?, f.u32()?, f.u8()? != 0, f.u8()? != 0, f.u8()? != 0);
    let mut flags = [(false, false); 6];
    for slot in &mut flags {
        *slot = (f.u8()? != 0, f.u8()? != 0);
    }
    let version = f.str()?;
    let mut engines = [(None, None); 6];
    for (slot, (has_json, has_stream)) in engines.iter_mut().zip(flags) {
        let (json, stream) = (f.str()?, f.str()?);
        *slot = (has_json.then_some(json), has_stream.then_some(stream));
    }
    Some(DefView { version: has_version.then_some(version), fp8: has_fp8.then_some(fp8), engines })
}

/// The instruction stream of engine `slot` of the `def.json` `g`, as `(dir, path in dir)`:
/// the engine JSON's `instr` wins over `def.json`'s `<eng>_instr`.
fn instr_of<'a>(log: &'a [u8], g: &Group<'a>, view: &DefView<'a>, slot: usize) -> Option<(&'a [u8], &'a [u8])> {
    let dir = dir_of_bytes(g.member);
    let (json, stream) = *view.engines.get(slot)?;
    let json = json?;
    let engine = groups(log)
        .filter(|e| e.commit.body.first() == Some(&ENGINE) && is_joined_bytes(e.member, dir, json))
        .last()
        .and_then(|e| {
            let mut f = e.commit.reader();
            let (_, has) = (f.u8()?, f.u8()? != 0);
            let instr = f.str()?;
            has.then_some(instr)
        });
    Some((dir, engine.or(stream)?))
}

/// Logs the instruction stream path of every engine of every `def.json` read (`INSTR`
/// records), so that each payload can be asked whether it is one.
fn log_instr_paths(work: &mut Work<'_>) {
    let front = work.front;
    if work.overflow {
        return;
    }
    // Each path is copied to a small stack buffer first: the log is appended to while read.
    let mut slot = 0;
    loop {
        let mut found: Option<([u8; 256], usize, usize)> = None;
        let mut seen = 0;
        let log = work.buf.get(..front).unwrap_or(&[]);
        'defs: for g in groups(log).filter(|g| g.commit.body.first() == Some(&DEF)) {
            let Some(view) = def_view(&g) else { continue };
            for e in 0..ENGINE_KEYS.len() {
                if let Some((dir, name)) = instr_of(log, &g, &view, e) {
                    if seen == slot {
                        let mut buf = [0u8; 256];
                        let (d, n) = (dir.len(), name.len());
                        if let (Some(a), Some(b)) = (buf.get_mut(..d), dir.get(..)) {
                            a.copy_from_slice(b);
                        }
                        if let Some(b) = buf.get_mut(d..d + n) {
                            b.copy_from_slice(name);
                            found = Some((buf, d, n));
                        } else {
                            // A path longer than the stack buffer (no real one comes near):
                            // not logged, so its `instr_size` prints as `null`.
                            found = Some((buf, 0, 0));
                        }
                        break 'defs;
                    }
                    seen += 1;
                }
            }
        }
        let Some((buf, d, n)) = found else { return };
        if d + n > 0 {
            let dir = buf.get(..d).unwrap_or(&[]);
            let name = buf.get(d..d + n).unwrap_or(&[]);
            work.push(INSTR, &[], &[dir, name]);
        }
        slot += 1;
    }
}

/// Why the document could not be written.
pub(crate) enum Short {
    /// The work buffer: bytes needed.
    Work(usize),
    /// The output buffer: the document's size.
    Json(usize),
}

/// Writes the document from the log of a successful check.
pub(crate) fn render(
    work: Work<'_>,
    header: &NeffHeader,
    integrity: Option<Integrity>,
    json: &mut [u8],
) -> Result<usize, Short> {
    // Besides the log and `info.json`: the sorting index, then room to unescape `info.json`'s
    // strings (as long as it, at most).
    let info_len = work.buf.len().saturating_sub(work.top);
    let after = work.most_in_group.saturating_mul(4).max(info_len);
    if work.overflow {
        let b = &work.bound;
        let unread = b.fixed.saturating_add(b.slots.saturating_mul(b.longest_instr)).saturating_add(b.payloads);
        return Err(Short::Work(work.peak.saturating_add(unread).saturating_add(after)));
    }
    let Work { buf, front, top, have_info, .. } = work;
    if top.saturating_sub(front) < info_len {
        return Err(Short::Work(front.saturating_add(info_len).saturating_add(info_len)));
    }
    let (log_and_free, info) = buf.split_at_mut(top);
    let (log, free) = log_and_free.split_at_mut(front);
    let log: &[u8] = log;
    let info: &[u8] = if have_info { info } else { &[] };
    let mut out = Out::new(json);
    let need_index = |n: usize| front.saturating_add(n.saturating_mul(4)).saturating_add(info_len);

    out.raw(b"{");
    out.key(true, "header");
    write_header(&mut out, header);

    // The chain's KELFs: neff.json's KELF nodes (by func name where any has it, else by op),
    // or without neff.json the one found by its conventional name.
    let neff = last(log, NEFF, None);
    let mut kelf_names: [Option<&[u8]>; 2] = [None, None];
    if neff.is_none() {
        kelf_names[0] = [&b"kelf-0.json"[..], b"kelf-a.json"].into_iter().find(|n| last(log, KELF, Some(n)).is_some());
    }
    let by_func = neff.is_some_and(|g| entries(log, &g).any(|r| r.tag == NODE && r.body.first() == Some(&1)));
    let chain = |f: &mut dyn FnMut(&'_ [u8])| match &neff {
        Some(g) => entries(log, g).filter(|r| r.tag == NODE).for_each(|r| {
            let mut fields = r.reader();
            if let (Some(mark), Some(member)) = (fields.u8(), fields.str()) {
                if (mark == 1) == by_func {
                    f(member);
                }
            }
        }),
        None => kelf_names.iter().flatten().for_each(|m| f(m)),
    };

    out.key(false, "kelf");
    out.raw(b"[");
    let mut first = true;
    chain(&mut |member| {
        if !first {
            out.raw(b",");
        }
        first = false;
        let k = last(log, KELF, Some(member));
        let mut f = k.map(|k| k.commit.reader());
        let fields = f.as_mut().and_then(|f| {
            let (_, has_target, arch) = (f.u8()?, f.u8()? != 0, f.opt_u32()?);
            let (version, target) = (f.str()?, f.str()?);
            Some((version, has_target.then_some(target), arch))
        });
        out.raw(b"{");
        out.key(true, "member");
        out.lossy(member);
        out.key(false, "version");
        out.opt(fields.map(|f| f.0), |o, v| o.lossy(v));
        out.key(false, "target");
        out.opt(fields.and_then(|f| f.1), |o, v| o.lossy(v));
        out.key(false, "arch");
        out.opt(fields.and_then(|f| f.2), |o, v| o.u64(v.into()));
        out.raw(b"}");
    });
    out.raw(b"]");

    for (key, output) in [("inputs", 0u8), ("outputs", 1)] {
        out.key(false, key);
        out.raw(b"[");
        let mut first = true;
        for r in neff.iter().flat_map(|g| entries(log, g)).filter(|r| r.tag == TENSOR) {
            let mut f = r.reader();
            let Some((kind, nrt, size, name, dtype, shape)) =
                (|| Some((f.u8()?, f.u32()?, f.u64()?, f.str()?, f.str()?, f.str()?)))()
            else {
                continue;
            };
            if kind != output {
                continue;
            }
            if !first {
                out.raw(b",");
            }
            first = false;
            out.raw(b"{");
            out.key(true, "name");
            out.lossy(name);
            out.key(false, "dtype");
            out.lossy(dtype);
            out.key(false, "nrt_dtype");
            out.u64(nrt.into());
            out.key(false, "shape");
            out.raw(b"[");
            for (i, d) in shape.chunks_exact(4).enumerate() {
                if i > 0 {
                    out.raw(b",");
                }
                out.u64(u32::from_le_bytes(d.try_into().unwrap_or([0; 4])).into());
            }
            out.raw(b"]");
            out.key(false, "size");
            out.u64(size);
            out.raw(b"}");
        }
        out.raw(b"]");
    }

    out.key(false, "subgraphs");
    out.raw(b"[");
    let mut first = true;
    let mut short_index = None;
    // Each graph of each chain KELF, in order; `(kelf, graph)` positions so far, to find the
    // definitions shown before (the host moves a definition's vars into the first subgraph
    // that names it: a later one shows none).
    let mut seen_graphs = 0usize;
    chain(&mut |member| {
        let Some(k) = last(log, KELF, Some(member)) else { return };
        for g in entries(log, &k).filter(|r| r.tag == GRAPH) {
            let mut f = g.reader();
            let (Some(name), Some(definition)) = (f.str(), f.str()) else { continue };
            if !first {
                out.raw(b",");
            }
            first = false;
            let shown_before = graph_defs_before(log, &neff, &kelf_names, by_func, seen_graphs, definition);
            seen_graphs += 1;
            if let Err(n) = write_subgraph(&mut out, log, free, name, definition, shown_before) {
                short_index.get_or_insert(need_index(n));
            }
        }
    });
    out.raw(b"]");
    if let Some(needed) = short_index {
        return Err(Short::Work(needed));
    }

    out.key(false, "hash");
    write_hash(&mut out, header, integrity);

    out.key(false, "compiler_version");
    write_tool_version(&mut out, info, free);
    out.raw(b"}");
    if out.fits() {
        Ok(out.len())
    } else {
        Err(Short::Json(out.len()))
    }
}

/// Whether a graph before position `upto` (over the chain's KELFs) names `definition`.
fn graph_defs_before(
    log: &[u8],
    neff: &Option<Group<'_>>,
    kelf_names: &[Option<&[u8]>; 2],
    by_func: bool,
    upto: usize,
    definition: &[u8],
) -> bool {
    let mut seen = 0usize;
    let mut found = false;
    let mut visit = |member: &[u8]| {
        let Some(k) = last(log, KELF, Some(member)) else { return };
        for g in entries(log, &k).filter(|r| r.tag == GRAPH) {
            if seen >= upto {
                return;
            }
            seen += 1;
            let mut f = g.reader();
            let _ = f.str();
            if f.str() == Some(definition) && last(log, DEF, Some(definition)).is_some() {
                found = true;
            }
        }
    };
    match neff {
        Some(g) => entries(log, g).filter(|r| r.tag == NODE).for_each(|r| {
            let mut fields = r.reader();
            if let (Some(mark), Some(member)) = (fields.u8(), fields.str()) {
                if (mark == 1) == by_func {
                    visit(member);
                }
            }
        }),
        None => kelf_names.iter().flatten().for_each(|m| visit(m)),
    }
    found
}

/// The `header` object.
fn write_header(out: &mut Out<'_>, h: &NeffHeader) {
    out.raw(b"{");
    out.key(true, "pkg_version");
    out.u64(h.pkg_version);
    out.key(false, "header_size");
    out.u64(h.header_size);
    out.key(false, "data_size");
    out.u64(h.data_size);
    out.key(false, "neff_version");
    out.raw(b"\"");
    out.u64(h.version_major);
    out.raw(b".");
    out.u64(h.version_minor);
    out.raw(b"\"");
    out.key(false, "build_version");
    out.lossy(h.build_version_bytes());
    out.key(false, "num_tpb");
    out.u64(h.num_tpb.into());
    out.key(false, "uuid");
    out.hex(&h.uuid.0);
    out.key(false, "name");
    out.lossy(h.name_bytes());
    out.key(false, "requested_tpb_count");
    out.u64(h.requested_tpb_count.into());
    out.key(false, "feature_bits");
    out.u64(h.feature_bits);
    out.key(false, "lnc_size");
    out.u64(h.lnc_size.into());
    out.raw(b"}");
}

/// The `hash` object: the stored digest and the outcome of the check.
fn write_hash(out: &mut Out<'_>, h: &NeffHeader, integrity: Option<Integrity>) {
    let integrity = integrity.unwrap_or(Integrity::NotRequested);
    let algorithm = h.hash_algorithm();
    out.raw(b"{");
    out.key(true, "algorithm");
    out.opt(algorithm, |o, a| {
        o.str(match a {
            neff::header::HashAlgorithm::Md5 => "md5",
            neff::header::HashAlgorithm::Sha256 => "sha256",
        })
    });
    out.key(false, "stored");
    out.hex(algorithm.map_or(&h.hash[..], |a| h.expected_digest(a)));
    out.key(false, "result");
    out.str(integrity.as_str());
    let (order, computed) = match integrity {
        Integrity::Match { order, computed } => (Some(order), Some(computed)),
        Integrity::Mismatch { computed, .. } => (None, Some(computed)),
        Integrity::NotRequested | Integrity::NotApplicable => (None, None),
    };
    out.key(false, "order");
    out.opt(order, |o, order| o.str(order.as_str()));
    out.key(false, "computed");
    out.opt(computed, |o, c| o.hex(c.as_bytes()));
    out.raw(b"}");
}

/// One subgraph object. `Err(n)`: the sorting index for `n` entries did not fit in `free`.
fn write_subgraph(
    out: &mut Out<'_>,
    log: &[u8],
    free: &mut [u8],
    name: &[u8],
    definition: &[u8],
    vars_shown_before: bool,
) -> Result<(), usize> {
    let def = last(log, DEF, Some(definition));
    let view = def.as_ref().and_then(def_view);
    out.raw(b"{");
    out.key(true, "name");
    out.lossy(name);
    out.key(false, "definition");
    out.lossy(definition);
    out.key(false, "version");
    out.opt(view.as_ref().and_then(|v| v.version), |o, v| o.lossy(v));

    // Vars by `var_id`, queues by name; ties keep the order read (the index is the record's
    // offset, which grows with it).
    let by_var_id = |r: &Rec<'_>| r.reader().u32().unwrap_or(0);
    out.key(false, "vars");
    out.raw(b"[");
    if let (Some(g), false) = (&def, vars_shown_before) {
        let n = sorted(log, free, g, VAR, |a, b| (by_var_id(a), a.at).cmp(&(by_var_id(b), b.at)))?;
        for (i, r) in index(free, n).filter_map(|at| Records { log, at }.next()).enumerate() {
            if i > 0 {
                out.raw(b",");
            }
            write_var(out, &r);
        }
    }
    out.raw(b"]");
    out.key(false, "dma_queues");
    out.raw(b"[");
    if let Some(g) = &def {
        let n = sorted(log, free, g, QUEUE, |a, b| (by_name(a), a.at).cmp(&(by_name(b), b.at)))?;
        for (i, r) in index(free, n).filter_map(|at| Records { log, at }.next()).enumerate() {
            if i > 0 {
                out.raw(b",");
            }
            write_queue(out, &r);
        }
    }
    out.raw(b"]");

    out.key(false, "engines");
    out.raw(b"[");
    if let (Some(g), Some(view)) = (&def, &view) {
        let dir = dir_of_bytes(definition);
        let mut first = true;
        for (slot, key) in ENGINE_KEYS.iter().enumerate() {
            let Some((Some(json), _)) = view.engines.get(slot).copied() else { continue };
            if !first {
                out.raw(b",");
            }
            first = false;
            out.raw(b"{");
            out.key(true, "engine");
            out.str(key.as_str());
            out.key(false, "json");
            joined(out, dir, json);
            let instr = instr_of(log, g, view, slot);
            out.key(false, "instr");
            out.opt(instr, |o, (d, n)| joined(o, d, n));
            // The member's size as the check reported it: its first copy in tar order.
            let size = instr.and_then(|(d, n)| {
                Records { log, at: 0 }
                    .filter(|r| r.tag == PAYLOAD)
                    .filter_map(|r| {
                        let mut f = r.reader();
                        let (seq, len, member) = (f.u32()?, f.u64()?, f.str()?);
                        is_joined_bytes(member, d, n).then_some((seq, len))
                    })
                    .min_by_key(|&(seq, _)| seq)
                    .map(|(_, len)| len)
            });
            out.key(false, "instr_size");
            out.opt(size, |o, s| o.u64(s));
            out.key(false, "ninstr");
            out.opt(size, |o, s| o.u64(s / 64));
            out.raw(b"}");
        }
    }
    out.raw(b"]");

    out.key(false, "carveouts");
    out.raw(b"[");
    let mut first = true;
    for r in def.iter().flat_map(|g| entries(log, g)).filter(|r| r.tag == CARVEOUT) {
        let mut f = r.reader();
        let Some((offset, size, start, num, kind)) = (|| Some((f.u64()?, f.u64()?, f.u64()?, f.u64()?, f.str()?)))()
        else {
            continue;
        };
        if !first {
            out.raw(b",");
        }
        first = false;
        out.raw(b"{");
        out.key(true, "type");
        out.lossy(kind);
        out.key(false, "offset");
        out.u64(offset);
        out.key(false, "size");
        out.u64(size);
        out.key(false, "start_partition");
        out.u64(start);
        out.key(false, "num_partitions");
        out.u64(num);
        out.raw(b"}");
    }
    out.raw(b"]");

    out.key(false, "fp8");
    out.opt(view.as_ref().and_then(|v| v.fp8), |o, (range, e4m3, e5m2, ocp, sis, sns)| {
        o.raw(b"{");
        o.key(true, "fp8_range_extension");
        o.bool(range);
        o.key(false, "emax_fp8_e4m3");
        o.u64(e4m3.into());
        o.key(false, "emax_fp8_e5m2");
        o.u64(e5m2.into());
        o.key(false, "ocp_sat");
        o.bool(ocp);
        o.key(false, "fp8_sis");
        o.bool(sis);
        o.key(false, "fp8_sns");
        o.bool(sns);
        o.raw(b"}");
    });
    out.raw(b"}");
    Ok(())
}

/// A queue record's name (after its fixed part).
fn by_name<'a>(r: &Rec<'a>) -> &'a [u8] {
    let mut f = r.reader();
    let _ = (f.opt_u32(), f.u32(), f.u8(), f.u32());
    f.str().unwrap_or(&[])
}

/// `dir/name`, or `name` at the root, as a JSON string.
fn joined(out: &mut Out<'_>, dir: &[u8], name: &[u8]) {
    if dir.is_empty() {
        out.lossy(name);
        return;
    }
    // Both parts are UTF-8 (member paths the core accepted): one string of three parts.
    let (Ok(dir), Ok(name)) = (core::str::from_utf8(dir), core::str::from_utf8(name)) else {
        out.null();
        return;
    };
    out.str_parts(&[dir, "/", name]);
}

fn write_var(out: &mut Out<'_>, r: &Rec<'_>) {
    let mut f = r.reader();
    let Some((var_id, mr, size, align, backing, has_file, name, var_type, file)) = (|| {
        Some((
            f.u32()?,
            f.opt_u32()?,
            f.opt_u64()?,
            f.opt_u64()?,
            f.opt_u64()?,
            f.u8()? != 0,
            f.str()?,
            f.str()?,
            f.str()?,
        ))
    })() else {
        return;
    };
    out.raw(b"{");
    out.key(true, "name");
    out.lossy(name);
    out.key(false, "type");
    out.lossy(var_type);
    out.key(false, "mr_type");
    out.opt(mr, |o, v| o.u64(v.into()));
    out.key(false, "var_id");
    out.u64(var_id.into());
    out.key(false, "size");
    out.opt(size, |o, v| o.u64(v));
    out.key(false, "alignment");
    out.opt(align, |o, v| o.u64(v));
    out.key(false, "file_name");
    out.opt(has_file.then_some(file), |o, v| o.lossy(v));
    out.key(false, "backing_variable_off");
    out.opt(backing, |o, v| o.u64(v));
    out.raw(b"}");
}

fn write_queue(out: &mut Out<'_>, r: &Rec<'_>) {
    let mut f = r.reader();
    let Some((ring, num, has_owner, _, name, kind, owner, sems)) =
        (|| Some((f.opt_u32()?, f.u32()?, f.u8()? != 0, f.u32()?, f.str()?, f.str()?, f.str()?, f.str()?)))()
    else {
        return;
    };
    out.raw(b"{");
    out.key(true, "name");
    out.lossy(name);
    out.key(false, "type");
    out.lossy(kind);
    out.key(false, "ring_type");
    out.opt(ring, |o, v| o.u64(v.into()));
    out.key(false, "owner");
    out.opt(has_owner.then_some(owner), |o, v| o.lossy(v));
    out.key(false, "num_queues");
    out.u64(num.into());
    out.key(false, "semaphores");
    out.raw(b"[");
    for (i, s) in sems.chunks_exact(4).enumerate() {
        if i > 0 {
            out.raw(b",");
        }
        out.u64(u32::from_le_bytes(s.try_into().unwrap_or([0; 4])).into());
    }
    out.raw(b"]");
    out.raw(b"}");
}

/// Writes the offsets of `g`'s `tag` records into `free` (4 bytes each) sorted by `cmp`; their
/// count. `Err(n)`: `free` cannot hold `n` offsets.
fn sorted(
    log: &[u8],
    free: &mut [u8],
    g: &Group<'_>,
    tag: u8,
    cmp: impl Fn(&Rec<'_>, &Rec<'_>) -> core::cmp::Ordering,
) -> Result<usize, usize> {
    let n = entries(log, g).filter(|r| r.tag == tag).count();
    if n.saturating_mul(4) > free.len() {
        return Err(n);
    }
    for (i, r) in entries(log, g).filter(|r| r.tag == tag).enumerate() {
        set(free, i, r.at as u32);
    }
    // Heapsort in place: no memory beyond the index, and no recursion.
    let less = |free: &[u8], a: usize, b: usize| -> bool {
        let (ra, rb) =
            (Records { log, at: get(free, a) as usize }.next(), Records { log, at: get(free, b) as usize }.next());
        match (ra, rb) {
            (Some(ra), Some(rb)) => cmp(&ra, &rb) == core::cmp::Ordering::Less,
            _ => false,
        }
    };
    let sift = |free: &mut [u8], mut root: usize, end: usize| loop {
        let mut child = 2 * root + 1;
        if child >= end {
            break;
        }
        if child + 1 < end && less(free, child, child + 1) {
            child += 1;
        }
        if !less(free, root, child) {
            break;
        }
        swap(free, root, child);
        root = child;
    };
    for start in (0..n / 2).rev() {
        sift(free, start, n);
    }
    for end in (1..n).rev() {
        swap(free, 0, end);
        sift(free, 0, end);
    }
    Ok(n)
}

/// The `i`-th offset of an index.
fn get(index: &[u8], i: usize) -> u32 {
    index.get(i * 4..i * 4 + 4).and_then(|b| b.try_into().ok()).map_or(u32::MAX, u32::from_le_bytes)
}

fn set(index: &mut [u8], i: usize, v: u32) {
    if let Some(b) = index.get_mut(i * 4..i * 4 + 4) {
        b.copy_from_slice(&v.to_le_bytes());
    }
}

fn swap(index: &mut [u8], a: usize, b: usize) {
    let (va, vb) = (get(index, a), get(index, b));
    set(index, a, vb);
    set(index, b, va);
}

/// The offsets of a sorted index of `n` entries.
fn index(free: &[u8], n: usize) -> impl Iterator<Item = usize> + '_ {
    (0..n).map(move |i| get(free, i) as usize)
}

/// `compiler_version`: `info.json`'s `tool_version`, when `info.json` is a JSON object with
/// that key holding a string (the last one, if it repeats), else `null`. `scratch` unescapes
/// its strings.
fn write_tool_version(out: &mut Out<'_>, info: &[u8], scratch: &mut [u8]) {
    // First the whole document is read (an invalid one gives `null`), counting the keys; then
    // the last `tool_version` is read again.
    let Some(nth) = last_tool_version(info, scratch) else {
        out.null();
        return;
    };
    let mut src = info;
    let mut tok = Tokenizer::new(scratch, DEPTH);
    let mut seen = 0usize;
    if tok.begin_object(&mut src).is_err() {
        out.null();
        return;
    }
    while let Ok(Some(key)) = tok.next_key(&mut src) {
        if key == "tool_version" {
            if seen == nth {
                match tok.read_str(&mut src) {
                    Ok(text) => out.str(text),
                    Err(_) => out.null(),
                }
                return;
            }
            seen += 1;
        }
        if tok.skip_value(&mut src).is_err() {
            break;
        }
    }
    out.null();
}

/// Nesting the host's JSON reader accepts (serde_json's recursion limit).
const DEPTH: u16 = 128;

/// Which `tool_version` key of `info` is the last, when `info` is a valid JSON object and that
/// key's value is a string.
fn last_tool_version(info: &[u8], scratch: &mut [u8]) -> Option<usize> {
    let mut src = info;
    let mut tok = Tokenizer::new(scratch, DEPTH);
    tok.begin_object(&mut src).ok()?;
    let (mut seen, mut last) = (0usize, None);
    while let Some(key) = tok.next_key(&mut src).ok()? {
        if key == "tool_version" {
            last = Some((seen, tok.peek_kind(&mut src).ok()? == TokenKind::Str));
            seen += 1;
        }
        tok.skip_value(&mut src).ok()?;
    }
    // Nothing but whitespace after the object.
    matches!(tok.next(&mut src).ok()?, Event::End).then_some(())?;
    match last {
        Some((n, true)) => Some(n),
        _ => None,
    }
}

/// The check of an info call: the container, the tap on its tar stream, the archive over it
/// and the loader, each a local of this frame for the call. The header and the integrity
/// outcome are returned for the document.
#[inline(never)]
pub(crate) fn run(
    lent: Lent<'_>,
    arch: Option<Arch>,
    work: &RefCell<Work<'_>>,
    report: &mut LoadReport,
) -> Result<(NeffHeader, Option<Integrity>), Error> {
    let Lent { reader, file_size, arena, replay, options, observer, .. } = lent;
    let mut sink = CObserver { ctx: observer.ctx, payload: None, warning: observer.warning };
    let open = OpenOptions { verify_integrity: options.verify_integrity, ..OpenOptions::default() };
    let container = Container::open(reader, file_size, &open, MinizInflater::new(), &mut sink)?;
    let opened = container.opened();
    let header = *opened.header();
    let mut archive = Archive::open_inflated(opened, Tap::new(container, work));
    let mut own = [0u8; BUILTIN_ARENA];
    let arena = match arena {
        Some(lent) => lent,
        None => &mut own[..],
    };
    let storage = Storage { arena, replay, deferred: &mut [], whole_names: &mut [] };
    let mut loader = Loader::with_storage(storage, LoadOptions { allow_legacy: options.allow_legacy });
    let mut info = InfoObserver { work, c: observer, pending: None, instr: None };
    loader.check(&mut archive, arch, report, &mut info, &mut sink)?;
    Ok((header, report.integrity))
}
