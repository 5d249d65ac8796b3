//! [`InfoLog`]: the observer of an info pass, which logs what the document needs as records
//! (`records.rs`) at the front of its buffer and keeps `info.json` at the top.

use crate::loader::{dir_of_bytes, is_joined_bytes, Manifest, MemberReport, Observer, PayloadReport};
use crate::manifest::def::ENGINE_KEYS;
use crate::manifest::neff::{kelf_mark, kelf_member};
use crate::manifest::{Arch, Entry, IoKind, IoTensor, KelfMark, MAX_DIMS, MAX_QUEUE_SEMAPHORES};

use super::records::{
    def_view, groups, instr_of, record_len, write_record, Records, CARVEOUT, COMMIT, DEF, ENGINE, GRAPH, GROUP, INSTR,
    KELF, NEFF, NODE, PAYLOAD, QUEUE, TENSOR, VAR,
};
use super::LogBuffer;

/// What an info pass logs, in a buffer `B`: the log grows from the front, `info.json` sits at
/// the top. An [`Observer`]: give it (or a tee of it) to a check, then
/// [`render`](InfoLog::render) the document.
pub struct InfoLog<B: LogBuffer> {
    pub(super) buf: B,
    /// End of the log as if every record had fit.
    pub(super) front: usize,
    /// Start of the kept `info.json` (`buf.len()` when none).
    pub(super) top: usize,
    /// Bytes of `info.json` copied so far.
    captured: usize,
    /// Bytes `info.json` takes (its declared size while it streams).
    reserved: usize,
    /// Whether `info.json` was kept whole.
    pub(super) have_info: bool,
    /// A record or `info.json` did not fit: the log is incomplete.
    pub(super) overflow: bool,
    /// The most bytes the log and `info.json` took at once, fitting or not.
    pub(super) peak: usize,
    /// Vars and queues of the group being logged, and the most of either in one group: the
    /// sorting index takes 4 bytes each.
    in_group: (usize, usize),
    pub(super) most_in_group: usize,
    /// Once the log overflowed, what the records it could not read would take: the
    /// instruction paths (each engine slot of each `def.json`: the directory and its
    /// `<eng>_instr`, or at most the longest engine `instr`) and every payload.
    pub(super) bound: Bound,
    /// Start of the group of entries waiting for their manifest, and a hash of its member (the
    /// log cannot be read back once it overflowed; then the hash tells groups apart, for the
    /// size the buffer needs).
    pending: Option<(usize, u64)>,
    /// The instruction stream paths, logged at the first payload: `(start, end)`.
    instr: Option<(usize, usize)>,
}

/// See `InfoLog::bound`.
#[derive(Default)]
pub(super) struct Bound {
    pub(super) slots: usize,
    pub(super) fixed: usize,
    pub(super) longest_instr: usize,
    pub(super) payloads: usize,
}

impl<B: LogBuffer> InfoLog<B> {
    /// An empty log in `buf`.
    pub fn new(buf: B) -> Self {
        let top = buf.bytes().len();
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
            pending: None,
            instr: None,
        }
    }

    /// The buffer back.
    pub fn into_buffer(self) -> B {
        self.buf
    }

    fn note_peak(&mut self) {
        self.peak = self.peak.max(self.front.saturating_add(self.reserved));
    }

    /// Whether the log can reach `front` bytes below `top` bytes kept at the top, growing the
    /// buffer if it can (the kept top moves to the new end).
    pub(super) fn room(&mut self, front: usize, top: usize) -> bool {
        let len = self.buf.bytes().len();
        if front.saturating_add(top) <= len {
            return true;
        }
        let want = front.saturating_add(top).max(len.saturating_mul(2));
        let kept = len.saturating_sub(self.top);
        if !self.buf.grow(want) {
            return false;
        }
        let new_len = self.buf.bytes().len();
        let Some(new_top) = new_len.checked_sub(kept) else { return false };
        if new_top < self.top || self.top > len {
            return false;
        }
        self.buf.bytes_mut().copy_within(self.top..len, new_top);
        self.top = new_top;
        front.saturating_add(top) <= new_len
    }

    /// Appends a record: `tag`, the body's length, `fixed`, then each of `strs` with its length.
    fn push(&mut self, tag: u8, fixed: &[u8], strs: &[&[u8]]) {
        match tag {
            GROUP => self.in_group = (0, 0),
            VAR => self.in_group.0 = self.in_group.0.saturating_add(1),
            QUEUE => self.in_group.1 = self.in_group.1.saturating_add(1),
            _ => {}
        }
        self.most_in_group = self.most_in_group.max(self.in_group.0).max(self.in_group.1);
        let start = self.front;
        let end = start.saturating_add(record_len(fixed, strs));
        self.front = end;
        self.note_peak();
        let kept = self.buf.bytes().len().saturating_sub(self.top);
        if self.overflow || !self.room(end, kept) {
            self.overflow = true;
            return;
        }
        let written = self.buf.bytes_mut().get_mut(start..end).is_some_and(|out| write_record(out, tag, fixed, strs));
        if !written {
            self.overflow = true;
        }
    }

    /// Drops the records from `at` on.
    fn truncate(&mut self, at: usize) {
        self.front = self.front.min(at);
    }

    /// The bytes of the last `info.json` kept whole.
    pub fn kept_info(&self) -> Option<&[u8]> {
        self.buf.bytes().get(self.top..).filter(|_| self.have_info)
    }

    /// `info.json` starts: `size` bytes, replacing a copy kept before.
    fn begin_capture(&mut self, size: u64) {
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        self.reserved = size;
        self.captured = 0;
        self.have_info = false;
        self.note_peak();
        if self.overflow || !self.room(self.front, size) {
            self.overflow = true;
            return;
        }
        match self.buf.bytes().len().checked_sub(size) {
            Some(top) if top >= self.front => self.top = top,
            _ => self.overflow = true,
        }
    }

    /// The next bytes of `info.json`.
    fn capture(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        let at = self.top.saturating_add(self.captured);
        if let Some(dst) = self.buf.bytes_mut().get_mut(at..at.saturating_add(bytes.len())) {
            dst.copy_from_slice(bytes);
            self.captured = self.captured.saturating_add(bytes.len());
        }
    }

    /// `info.json` ended.
    fn end_capture(&mut self) {
        self.have_info = !self.overflow && self.captured == self.reserved;
    }

    /// The group for `member`'s entries: the pending one if it is `member`'s, else a new one
    /// (what another member left pending is dropped).
    fn group(&mut self, member: &str) {
        let hash = fnv1a(member.as_bytes());
        if let Some((start, pending)) = self.pending {
            let same = if self.overflow {
                pending == hash
            } else {
                group_member(self.buf.bytes(), start, self.front) == Some(member.as_bytes())
            };
            if same {
                return;
            }
            self.truncate(start);
        }
        self.pending = Some((self.front, hash));
        self.push(GROUP, &[], &[member.as_bytes()]);
    }

    /// Logs the instruction stream path of every engine of every `def.json` read (`INSTR`
    /// records), so that each payload can be asked whether it is one. The paths are read from
    /// the log as it stands and written after it: first measured, then written in one go.
    fn log_instr_paths(&mut self) {
        if self.overflow {
            return;
        }
        let front = self.front;
        let each = |log: &[u8], f: &mut dyn FnMut(&[u8], &[u8])| {
            for g in groups(log).filter(|g| g.commit.body.first() == Some(&DEF)) {
                let Some(view) = def_view(&g) else { continue };
                for slot in 0..ENGINE_KEYS.len() {
                    if let Some((dir, name)) = instr_of(log, &g, &view, slot) {
                        f(dir, name);
                    }
                }
            }
        };
        let mut total = 0usize;
        each(self.buf.bytes().get(..front).unwrap_or(&[]), &mut |dir, name| {
            total = total.saturating_add(record_len(&[], &[dir, name]));
        });
        let end = front.saturating_add(total);
        self.front = end;
        self.note_peak();
        let kept = self.buf.bytes().len().saturating_sub(self.top);
        if !self.room(end, kept) {
            self.overflow = true;
            return;
        }
        let Some((log, tail)) = self.buf.bytes_mut().get_mut(..end).map(|b| b.split_at_mut(front)) else {
            self.overflow = true;
            return;
        };
        let log: &[u8] = log;
        let mut at = 0usize;
        let mut whole = true;
        each(log, &mut |dir, name| {
            let len = record_len(&[], &[dir, name]);
            let next = at.saturating_add(len);
            whole &= tail.get_mut(at..next).is_some_and(|out| write_record(out, INSTR, &[], &[dir, name]));
            at = next;
        });
        if !whole {
            self.overflow = true;
        }
    }
}

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

/// Up to `N` u32s as one string of little-endian bytes (the core's parsers hold at most
/// [`MAX_QUEUE_SEMAPHORES`] semaphores and [`MAX_DIMS`] dimensions, which `N` is).
struct Words<const N: usize> {
    bytes: [[u8; 4]; N],
    len: usize,
}

impl<const N: usize> Words<N> {
    fn of(values: &[u32]) -> Self {
        let mut words = Self { bytes: [[0; 4]; N], len: 0 };
        for (slot, v) in words.bytes.iter_mut().zip(values) {
            *slot = v.to_le_bytes();
            words.len = words.len.saturating_add(1);
        }
        words
    }
    fn as_bytes(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or(&[]).as_flattened()
    }
}

/// An optional string as a presence byte (in the fixed part) and its text.
fn opt_str(s: Option<&str>) -> (u8, &[u8]) {
    (u8::from(s.is_some()), s.map_or(&[][..], str::as_bytes))
}

/// The member whose body is kept: producer metadata (spec §10.1), whose `tool_version` is
/// the document's `compiler_version`.
const INFO_JSON: &[u8] = b"info.json";

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The member of the `GROUP` record at `start`, if the log holds it.
fn group_member(log: &[u8], start: usize, front: usize) -> Option<&[u8]> {
    let rec = Records { log: log.get(..front)?, at: start }.next()?;
    (rec.tag == GROUP).then(|| rec.reader().str())?
}

impl<B: LogBuffer> Observer for InfoLog<B> {
    /// `info.json` at the root (the loader skips it): its body is kept, a later copy replacing
    /// an earlier one.
    fn member(&mut self, member: &MemberReport<'_>) -> bool {
        let info = member.name.as_bytes() == INFO_JSON;
        if info {
            self.begin_capture(member.size);
        }
        info
    }

    fn member_bytes(&mut self, bytes: &[u8]) {
        self.capture(bytes);
    }

    fn member_end(&mut self) {
        self.end_capture();
    }

    fn entry(&mut self, member: &str, entry: &Entry<'_>) {
        let interesting =
            matches!(entry, Entry::Var(_) | Entry::DmaQueue(_) | Entry::Carveout(_) | Entry::Graph(_) | Entry::Node(_));
        if !interesting {
            return;
        }
        self.group(member);
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
                self.push(VAR, fixed.as_slice(), &[v.name.as_bytes(), v.var_type.as_bytes(), file]);
            }
            Entry::DmaQueue(q) => {
                let (has_owner, owner) = opt_str(q.owner.as_deref());
                let sems = Words::<{ MAX_QUEUE_SEMAPHORES as usize }>::of(q.semaphores());
                let fixed = Fixed::new()
                    .opt_u32(q.ring_type().map(|r| r.value()))
                    .u32(q.num_queues)
                    .u8(has_owner)
                    .u32(u32::try_from(q.semaphores().len()).unwrap_or(u32::MAX));
                // The semaphores as a string of little-endian u32s, after the texts.
                let texts = [q.name.as_bytes(), q.queue_type.as_bytes(), owner, sems.as_bytes()];
                self.push(QUEUE, fixed.as_slice(), &texts);
            }
            Entry::Carveout(c) => {
                let fixed = Fixed::new().u64(c.offset).u64(c.size).u64(c.start_partition).u64(c.num_partitions);
                self.push(CARVEOUT, fixed.as_slice(), &[c.carveout_type.as_bytes()]);
            }
            Entry::Graph(g) => self.push(GRAPH, &[], &[g.name.as_bytes(), g.definition.as_bytes()]),
            Entry::Node(n) => {
                if let (Some(mark), Some(kelf)) = (kelf_mark(n), kelf_member(n)) {
                    let by_func = u8::from(mark == KelfMark::FuncName);
                    self.push(NODE, &[by_func], &[kelf.as_bytes()]);
                }
            }
            _ => {}
        }
    }

    fn io_tensor(&mut self, t: &IoTensor<'_>) {
        // They belong to the `neff.json` being read (the host's collector keeps them with
        // whatever is pending); with nothing pending, a group of no member, which no manifest
        // takes.
        if self.pending.is_none() {
            self.group("");
        }
        let fixed = Fixed::new().u8(u8::from(t.kind == IoKind::Output)).u32(t.nrt_dtype.value()).u64(t.size);
        let shape = Words::<{ MAX_DIMS as usize }>::of(t.shape);
        self.push(TENSOR, fixed.as_slice(), &[t.name.as_bytes(), t.dtype.as_bytes(), shape.as_bytes()]);
    }

    fn manifest(&mut self, member: &str, manifest: Manifest<'_>) {
        self.group(member);
        self.pending = None;
        match manifest {
            Manifest::Neff(_) => self.push(COMMIT, &[NEFF], &[]),
            Manifest::Kelf(doc) => {
                let (has_target, target) = opt_str(doc.target.as_deref());
                let fixed = Fixed::new().u8(KELF).u8(has_target).opt_u32(doc.arch_value().map(Arch::value));
                self.push(COMMIT, fixed.as_slice(), &[doc.version.as_bytes(), target]);
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
                        let b = &mut self.bound;
                        b.slots = b.slots.saturating_add(1);
                        b.fixed = b.fixed.saturating_add(13usize.saturating_add(dir)).saturating_add(stream.len());
                    }
                    fixed = fixed.u8(has_json).u8(has_stream);
                    let at = i.saturating_mul(2).saturating_add(1);
                    if let Some(slot) = strs.get_mut(at..at.saturating_add(2)) {
                        slot.copy_from_slice(&[json, stream]);
                    }
                }
                self.push(COMMIT, fixed.as_slice(), &strs);
            }
            Manifest::Engine(doc) => {
                let (has_instr, instr) = opt_str(doc.instr.as_deref());
                self.bound.longest_instr = self.bound.longest_instr.max(instr.len());
                self.push(COMMIT, &[ENGINE, has_instr], &[instr]);
            }
        }
    }

    fn payload(&mut self, p: &PayloadReport<'_>) {
        let b = &mut self.bound;
        b.payloads = b.payloads.saturating_add(21usize.saturating_add(p.member.len()));
        // The chain is bound: every manifest has been read. What waits for one now never gets it.
        if let Some((start, _)) = self.pending.take() {
            self.truncate(start);
        }
        let (start, end) = match self.instr {
            Some(span) => span,
            None => {
                let start = self.front;
                self.log_instr_paths();
                let span = (start, self.front);
                self.instr = Some(span);
                span
            }
        };
        if self.overflow {
            return;
        }
        let log = self.buf.bytes().get(..end).unwrap_or(&[]);
        let named = Records { log, at: start }.any(|r| {
            let mut r = r.reader();
            matches!((r.str(), r.str()), (Some(dir), Some(name)) if is_joined_bytes(p.member.as_bytes(), dir, name))
        });
        if named {
            let fixed = Fixed::new().u32(p.seq).u64(p.member_len);
            self.push(PAYLOAD, fixed.as_slice(), &[p.member.as_bytes()]);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// A buffer that grows, as a host lends one.
    struct Growing([u8; 1024], usize);

    impl LogBuffer for Growing {
        fn bytes(&self) -> &[u8] {
            &self.0[..self.1]
        }
        fn bytes_mut(&mut self) -> &mut [u8] {
            &mut self.0[..self.1]
        }
        fn grow(&mut self, len: usize) -> bool {
            if len > self.0.len() {
                return false;
            }
            self.1 = self.1.max(len);
            true
        }
    }

    fn show(log: &mut impl Observer, name: &str, body: &[u8]) -> bool {
        let member = MemberReport { name, typeflag: b'0', size: body.len() as u64, header_offset: 0, data_offset: 512 };
        let asked = log.member(&member);
        if asked {
            body.chunks(3).for_each(|chunk| log.member_bytes(chunk));
            log.member_end();
        }
        asked
    }

    #[test]
    fn the_log_keeps_the_last_root_info_json_the_loader_shows_it() {
        let mut buf = [0u8; 64];
        let mut log = InfoLog::new(&mut buf[..]);
        let members: [(&str, &[u8]); 5] = [
            ("info.json", b"one"),
            ("sg00/info.json", b"three"),
            ("info.json", b"0123456789"),
            ("debug_info/sg00.dbg", b"x"),
            ("info.json.bak", b"four"),
        ];
        let asked: heapless::Vec<&str, 5> = members.iter().filter(|(n, b)| show(&mut log, n, b)).map(|m| m.0).collect();
        assert_eq!(asked, ["info.json", "info.json"]);
        assert_eq!(log.kept_info(), Some(&b"0123456789"[..]));
        // A copy cut short (the load failed in it) is not kept.
        let member = MemberReport { name: "info.json", typeflag: b'0', size: 8, header_offset: 0, data_offset: 0 };
        assert!(log.member(&member));
        log.member_bytes(b"abc");
        assert_eq!(log.kept_info(), None);
    }

    #[test]
    fn a_lent_slice_overflows_where_a_growing_buffer_grows_and_keeps_info_json_whole() {
        let mut lent = [0u8; 16];
        let mut small = InfoLog::new(&mut lent[..]);
        show(&mut small, "info.json", b"{\"tool_version\":\"2\"}");
        assert!(small.overflow && small.kept_info().is_none());

        let mut log = InfoLog::new(Growing([0; 1024], 8));
        assert!(show(&mut log, "info.json", b"0123456789"));
        // Records pushed below it grow the buffer; the kept bytes move to the new top.
        for _ in 0..4 {
            log.group("sg00/def.json");
            log.push(VAR, &[0; 20], &[b"a_long_var_name", b"input"]);
        }
        assert!(!log.overflow);
        assert!(log.buf.1 > 8);
        assert_eq!(log.kept_info(), Some(&b"0123456789"[..]));
        let records = Records { log: &log.buf.bytes()[..log.front], at: 0 }.count();
        assert_eq!(records, 5, "one group and its four vars");
    }
}
