//! The info log's records: how they are laid out, read back and grouped by manifest.
//!
//! A record is a tag byte, its body's length (u32, little-endian), then the body: a fixed
//! part (numbers, presence bytes), then each text as its length (u32) and bytes.

use crate::loader::{dir_of_bytes, is_joined_bytes};

// Record tags.
/// A manifest's entries start: the member.
pub(super) const GROUP: u8 = 1;
/// The manifest of the open group was read: its kind and what the document needs of it.
pub(super) const COMMIT: u8 = 2;
/// A var of a `def.json`.
pub(super) const VAR: u8 = 3;
/// A DMA queue set of a `def.json`.
pub(super) const QUEUE: u8 = 4;
/// A state-buffer carveout of a `def.json`.
pub(super) const CARVEOUT: u8 = 5;
/// A graph of a KELF.
pub(super) const GRAPH: u8 = 6;
/// A KELF node of `neff.json`.
pub(super) const NODE: u8 = 7;
/// An I/O tensor of `neff.json`.
pub(super) const TENSOR: u8 = 8;
/// An instruction stream path: `(dir, name)`.
pub(super) const INSTR: u8 = 9;
/// An instruction stream payload: its position, size and member.
pub(super) const PAYLOAD: u8 = 10;

// Manifest kinds of a `COMMIT`.
/// `neff.json`.
pub(super) const NEFF: u8 = 1;
/// A KELF descriptor.
pub(super) const KELF: u8 = 2;
/// A `def.json`.
pub(super) const DEF: u8 = 3;
/// An engine JSON.
pub(super) const ENGINE: u8 = 4;

/// Bytes of a record of a `fixed` part and `strs`, its 5-byte head included.
pub(super) fn record_len(fixed: &[u8], strs: &[&[u8]]) -> usize {
    strs.iter().fold(fixed.len(), |n, s| n.saturating_add(4).saturating_add(s.len())).saturating_add(5)
}

/// Writes a record into `out`, which is [`record_len`] bytes long; `false` when a text or the
/// body is too long for its u32 length.
pub(super) fn write_record(out: &mut [u8], tag: u8, fixed: &[u8], strs: &[&[u8]]) -> bool {
    let Ok(body) = u32::try_from(record_len(fixed, strs).saturating_sub(5)) else { return false };
    let mut w = Cursor { out, at: 0 };
    w.put(&[tag]);
    w.put(&body.to_le_bytes());
    w.put(fixed);
    for s in strs {
        let Ok(len) = u32::try_from(s.len()) else { return false };
        w.put(&len.to_le_bytes());
        w.put(s);
    }
    true
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

/// One record of the log.
#[derive(Clone, Copy)]
pub(super) struct Rec<'a> {
    pub(super) tag: u8,
    pub(super) at: usize,
    pub(super) body: &'a [u8],
}

impl<'a> Rec<'a> {
    pub(super) fn reader(&self) -> Fields<'a> {
        Fields { body: self.body }
    }
}

/// The records of a log from `at` on.
#[derive(Clone)]
pub(super) struct Records<'a> {
    pub(super) log: &'a [u8],
    pub(super) at: usize,
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
pub(super) struct Fields<'a> {
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
    pub(super) fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }
    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(super) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(super) fn opt_u32(&mut self) -> Option<Option<u32>> {
        let has = self.u8()? != 0;
        let v = self.u32()?;
        Some(has.then_some(v))
    }
    pub(super) fn opt_u64(&mut self) -> Option<Option<u64>> {
        let has = self.u8()? != 0;
        let v = self.u64()?;
        Some(has.then_some(v))
    }
    pub(super) fn str(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()? as usize;
        self.take(len)
    }
}

/// A committed manifest: its group's records and the `COMMIT` record.
#[derive(Clone, Copy)]
pub(super) struct Group<'a> {
    pub(super) start: usize,
    pub(super) member: &'a [u8],
    pub(super) commit: Rec<'a>,
}

/// Every committed manifest of the log, in order.
pub(super) fn groups(log: &[u8]) -> impl Iterator<Item = Group<'_>> {
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
pub(super) fn last<'a>(log: &'a [u8], kind: u8, member: Option<&[u8]>) -> Option<Group<'a>> {
    groups(log).filter(|g| g.commit.body.first() == Some(&kind) && member.is_none_or(|m| m == g.member)).last()
}

/// The entry records of a group, in order.
pub(super) fn entries<'a>(log: &'a [u8], g: &Group<'a>) -> impl Iterator<Item = Rec<'a>> {
    Records { log, at: g.start }.skip(1).take_while(|r| r.tag != COMMIT)
}

/// An engine slot of a `def.json`: its engine JSON and the stream `def.json` names.
pub(super) type EngineSlot<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// A `def.json`'s commit, read.
pub(super) struct DefView<'a> {
    pub(super) version: Option<&'a [u8]>,
    pub(super) fp8: Option<(bool, u32, u32, bool, bool, bool)>,
    /// Per engine slot: its JSON and the stream `def.json` names.
    pub(super) engines: [EngineSlot<'a>; 6],
}

pub(super) fn def_view<'a>(g: &Group<'a>) -> Option<DefView<'a>> {
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
pub(super) fn instr_of<'a>(
    log: &'a [u8],
    g: &Group<'a>,
    view: &DefView<'a>,
    slot: usize,
) -> Option<(&'a [u8], &'a [u8])> {
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
