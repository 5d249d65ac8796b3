//! The memory a load lends: one caller-provided byte buffer, filled front to back.
//!
//! What a load must remember grows with the model (the chain's member names, each weight's
//! name and size, the I/O join of `neff.json`), so it cannot live in fixed tables without
//! either refusing big models or wasting a controller's RAM. As smoltcp's
//! `SocketSet::new(&mut storage[..])`, the caller lends the memory instead: a firmware image
//! passes a static buffer of a few KiB, a host tool a large one, and one code path serves both.
//!
//! The arena is a bump allocator over `&mut [u8]`: records are appended and never moved, so a
//! record is named by its byte offset ([`Span`] for a string, a `u32` position for a record).
//! Records are encoded explicitly as little-endian bytes (no `unsafe`, no alignment concerns).
//! What binding keeps grows from the bottom; scratch of one document (the `neff.json` I/O
//! join) grows down from the top and is dropped with [`Arena::release_top`], whatever the
//! bottom gained meanwhile.
//! When the buffer is full the load stops with [`ErrorKind::ArenaFull`], which says how many
//! bytes were needed: never a truncation.
//!
//! **Arithmetic.** Lengths come from the NEFF (names, sizes): every position is checked
//! against the buffer (a miss is [`ErrorKind::ArenaFull`], or a read of nothing), and the
//! figures an error reports saturate.
#![deny(clippy::arithmetic_side_effects)]

use crate::error::ErrorKind;

/// A string or byte run stored in an [`Arena`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Span {
    /// Offset of the first byte.
    pub at: u32,
    /// Length in bytes.
    pub len: u32,
}

impl Span {
    /// The empty span.
    pub const EMPTY: Span = Span { at: 0, len: 0 };

    /// Bytes of the encoded form ([`Span::encode`]).
    pub const ENCODED: usize = 6;

    /// The longest run an arena stores: the encoded length is a `u16`. Strings of a NEFF are
    /// far shorter (the tar layer and the manifests cap them at a few KiB).
    pub const MAX_LEN: usize = u16::MAX as usize;

    /// Little-endian `at` (`u32`) then `len` (`u16`; [`Arena`] stores no longer run).
    pub fn encode(self) -> [u8; 6] {
        let [a0, a1, a2, a3] = self.at.to_le_bytes();
        let [l0, l1] = u16::try_from(self.len).unwrap_or(u16::MAX).to_le_bytes();
        [a0, a1, a2, a3, l0, l1]
    }

    /// The inverse of [`Span::encode`].
    pub fn decode(bytes: [u8; 6]) -> Self {
        let [a0, a1, a2, a3, l0, l1] = bytes;
        Span { at: u32::from_le_bytes([a0, a1, a2, a3]), len: u32::from(u16::from_le_bytes([l0, l1])) }
    }
}

/// The error for a run longer than [`Span::MAX_LEN`].
fn too_long() -> ErrorKind {
    ErrorKind::Capacity(crate::error::CapacityError { limit: "Span::MAX_LEN", capacity: Span::MAX_LEN as u64 })
}

/// Moves `buf[from..]` to the front of `buf`, as `buf.copy_within(from.., 0)` does. The two
/// places that close a gap (a kept scratch run, a settled replay) move bytes down only.
pub(crate) fn move_down(buf: &mut [u8], from: usize) {
    // A host has `memmove` anyway, and a settled replay moves megabytes: one call.
    #[cfg(not(target_os = "none"))]
    if from < buf.len() {
        buf.copy_within(from.., 0);
    }
    #[cfg(target_os = "none")]
    move_down_in_pieces(buf, from);
}

/// [`move_down`] in pieces of `from` bytes that never overlap: without `copy_within` the
/// image needs no `memmove` (1.5 KB of flash on a Cortex-M4).
#[cfg(any(target_os = "none", test))]
fn move_down_in_pieces(buf: &mut [u8], from: usize) {
    if from == 0 {
        return;
    }
    let mut dst = 0usize;
    // Each piece goes from `dst + from` to `dst`; the next starts where this one's source did.
    while let Some(src) = dst.checked_add(from).filter(|&src| src < buf.len()) {
        let Some((head, tail)) = buf.split_at_mut_checked(src) else { break };
        let piece = head.get_mut(dst..).unwrap_or(&mut []);
        piece.iter_mut().zip(tail.iter()).for_each(|(d, s)| *d = *s);
        dst = src;
    }
}

/// A caller-lent buffer, filled front to back.
#[derive(Debug)]
pub struct Arena<'a> {
    buf: &'a mut [u8],
    /// End of the bottom part.
    used: usize,
    /// Start of the top (scratch) part.
    top: usize,
    peak: usize,
    /// Reads since the arena was made or cleared ([`Arena::reads`]).
    #[cfg(feature = "read-count")]
    reads: core::cell::Cell<u64>,
}

impl<'a> Arena<'a> {
    /// An empty arena over `buf` (at most 4 GiB of it is used: offsets are `u32`).
    pub fn new(buf: &'a mut [u8]) -> Self {
        let top = buf.len().min(u32::MAX as usize);
        Self {
            buf,
            used: 0,
            top,
            peak: 0,
            #[cfg(feature = "read-count")]
            reads: core::cell::Cell::new(0),
        }
    }

    /// Reads of records, names and words since the arena was made or cleared: what a load's
    /// lookups cost, whatever the machine.
    #[cfg(feature = "read-count")]
    pub fn reads(&self) -> u64 {
        self.reads.get()
    }

    /// Counts one read.
    #[inline(always)]
    fn count_read(&self) {
        #[cfg(feature = "read-count")]
        self.reads.set(self.reads.get().saturating_add(1));
    }

    /// Bytes lent.
    pub fn capacity(&self) -> usize {
        self.buf.len().min(u32::MAX as usize)
    }

    /// Bytes in use (bottom and top).
    pub fn used(&self) -> usize {
        self.used.saturating_add(self.capacity().saturating_sub(self.top))
    }

    /// The most bytes in use at once since the arena was made (or [`Arena::clear`]ed).
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Forgets everything (the peak too).
    pub fn clear(&mut self) {
        self.used = 0;
        self.top = self.capacity();
        self.peak = 0;
        #[cfg(feature = "read-count")]
        self.reads.set(0);
    }

    /// The current end, to [`Arena::release_to`] later.
    pub fn mark(&self) -> usize {
        self.used
    }

    /// Drops every record appended after `mark`.
    pub fn release_to(&mut self, mark: usize) {
        self.used = self.used.min(mark);
    }

    fn full(&self, len: usize) -> ErrorKind {
        ErrorKind::ArenaFull {
            capacity: self.capacity() as u64,
            needed: (self.used() as u64).saturating_add(len as u64),
        }
    }

    /// Appends `len` zero bytes at the bottom and returns their offset.
    pub fn alloc(&mut self, len: usize) -> Result<u32, ErrorKind> {
        let end = self.used.checked_add(len).filter(|&e| e <= self.top).ok_or_else(|| self.full(len))?;
        let at = self.used as u32;
        if let Some(dst) = self.buf.get_mut(self.used..end) {
            dst.fill(0);
        }
        self.used = end;
        self.peak = self.peak.max(self.used());
        Ok(at)
    }

    /// Takes `len` zero bytes from the top (scratch) and returns their offset.
    pub fn alloc_top(&mut self, len: usize) -> Result<u32, ErrorKind> {
        let start = self.top.checked_sub(len).filter(|&s| s >= self.used).ok_or_else(|| self.full(len))?;
        if let Some(dst) = self.buf.get_mut(start..self.top) {
            dst.fill(0);
        }
        self.top = start;
        self.peak = self.peak.max(self.used());
        Ok(start as u32)
    }

    /// The current start of the top part, to [`Arena::release_top`] later.
    pub fn mark_top(&self) -> usize {
        self.top
    }

    /// Drops every scratch allocation made after `mark`.
    pub fn release_top(&mut self, mark: usize) {
        self.top = self.top.max(mark.min(self.capacity()));
    }

    /// The scratch bytes allocated since `mark`, to work on in place.
    pub fn top_since_mut(&mut self, mark: usize) -> &mut [u8] {
        let end = mark.min(self.capacity()).max(self.top);
        self.buf.get_mut(self.top..end).unwrap_or(&mut [])
    }

    /// Keeps the scratch allocated since `mark`: its bytes move down to the end of the bottom
    /// part (one move within the buffer, so keeping a run never needs room for two copies)
    /// and the top is released to `mark`. Returns the run's new offset.
    pub fn keep_top(&mut self, mark: usize) -> u32 {
        let end = mark.min(self.capacity()).max(self.top);
        let at = self.used;
        // `used <= top <= end <= capacity`: the run fits where the free gap and it were.
        let len = end.saturating_sub(self.top);
        if let Some(run) = self.buf.get_mut(at..end).filter(|_| at <= self.top) {
            // The run starts `top - at` into `at..end`; the `min` lets the compiler see it fits.
            let from = self.top.saturating_sub(at).min(run.len());
            move_down(run, from);
            self.used = at.saturating_add(len);
            self.top = end;
        }
        at as u32
    }

    /// Appends `s` at the top (scratch).
    pub fn push_str_top(&mut self, s: &str) -> Result<Span, ErrorKind> {
        if s.len() > Span::MAX_LEN {
            return Err(too_long());
        }
        let at = self.alloc_top(s.len())?;
        self.write(at, s.as_bytes());
        Ok(Span { at, len: s.len() as u32 })
    }

    fn in_use(&self, start: usize, end: usize) -> bool {
        (end <= self.used) || (start >= self.top && end <= self.capacity())
    }

    /// Appends `bytes`.
    pub fn push_bytes(&mut self, bytes: &[u8]) -> Result<Span, ErrorKind> {
        if bytes.len() > Span::MAX_LEN {
            return Err(too_long());
        }
        let at = self.alloc(bytes.len())?;
        self.write(at, bytes);
        Ok(Span { at, len: bytes.len() as u32 })
    }

    /// Appends `s`.
    pub fn push_str(&mut self, s: &str) -> Result<Span, ErrorKind> {
        self.push_bytes(s.as_bytes())
    }

    /// The bytes of `span` (empty if it is not inside a used part of the arena).
    #[inline(never)]
    pub fn bytes(&self, span: Span) -> &[u8] {
        self.count_read();
        let start = span.at as usize;
        start
            .checked_add(span.len as usize)
            .filter(|&end| self.in_use(start, end))
            .and_then(|end| self.buf.get(start..end))
            .unwrap_or(&[])
    }

    /// True when the bytes of `span` are `s` (no UTF-8 check: the fast way to compare names).
    pub fn eq(&self, span: Span, s: &str) -> bool {
        self.bytes(span) == s.as_bytes()
    }

    /// The string of `span` (empty if it is not a string pushed with [`Arena::push_str`]).
    pub fn str(&self, span: Span) -> &str {
        core::str::from_utf8(self.bytes(span)).unwrap_or("")
    }

    /// Reads `N` bytes at `at` (zeros outside the used part).
    pub fn read<const N: usize>(&self, at: u32) -> [u8; N] {
        // A host reads a fixed size in place: no call, no `memcpy` of a few bytes (a real
        // training NEFF's lists and logs make 300,000 such reads). The image keeps one copy
        // of the bounds checks, in `read_into`.
        #[cfg(not(target_os = "none"))]
        {
            self.count_read();
            let start = at as usize;
            let end = start.checked_add(N).filter(|&e| self.in_use(start, e));
            let bytes = end.and_then(|e| self.buf.get(start..e)).and_then(|b| <[u8; N]>::try_from(b).ok());
            bytes.unwrap_or([0; N])
        }
        #[cfg(target_os = "none")]
        {
            let mut out = [0u8; N];
            self.read_into(at, &mut out);
            out
        }
    }

    /// Fills `out` from `at` (left as it is outside the used part).
    // Not inlined: a record read or write is called from some sixty places, and each inlined
    // copy of the bounds checks costs more flash than the call.
    #[inline(never)]
    pub fn read_into(&self, at: u32, out: &mut [u8]) {
        self.count_read();
        let start = at as usize;
        let end = start.checked_add(out.len()).filter(|&e| self.in_use(start, e));
        if let Some(src) = end.and_then(|e| self.buf.get(start..e)) {
            out.copy_from_slice(src);
        }
    }

    /// Overwrites bytes at `at` inside the used part (ignored outside it).
    #[inline(never)]
    pub fn write(&mut self, at: u32, bytes: &[u8]) {
        let start = at as usize;
        let end = start.checked_add(bytes.len()).filter(|&e| self.in_use(start, e));
        if let Some(dst) = end.and_then(|e| self.buf.get_mut(start..e)) {
            dst.copy_from_slice(bytes);
        }
    }

    /// The `u32` at `at`.
    // Not inlined: every step along a list reads one (some fifty places).
    #[inline(never)]
    pub fn u32_at(&self, at: u32) -> u32 {
        u32::from_le_bytes(self.read(at))
    }

    /// The `u64` at `at`.
    pub fn u64_at(&self, at: u32) -> u64 {
        u64::from_le_bytes(self.read(at))
    }

    /// The [`Span`] at `at`.
    pub fn span_at(&self, at: u32) -> Span {
        Span::decode(self.read(at))
    }
}

/// A record with a fixed encoded size, stored in an [`Arena`].
pub trait Record: Sized {
    /// Bytes of the encoded form.
    const SIZE: usize;
    /// Encodes into `out` (exactly [`Record::SIZE`] bytes).
    fn encode(&self, out: &mut [u8]);
    /// Decodes from `bytes` (exactly [`Record::SIZE`] bytes).
    fn decode(bytes: &[u8]) -> Self;
    /// Where the record's tail starts, for a record pushed with [`List::push_with_tail`]: a
    /// name stored right after it, of which the record encodes only the length (4 bytes fewer
    /// than a [`Span`]), and what else the record keeps there. Called on every read; the
    /// default ignores it.
    fn tail_at(&mut self, _at: u32, _arena: &Arena<'_>) {}
}

/// Little-endian field writer for [`Record::encode`].
pub struct Writer<'b> {
    out: &'b mut [u8],
    at: usize,
}

impl<'b> Writer<'b> {
    /// Writes from the start of `out`.
    pub fn new(out: &'b mut [u8]) -> Self {
        Self { out, at: 0 }
    }

    /// Appends raw bytes (dropped past the end: sizes are fixed by [`Record::SIZE`]).
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        // `checked_add` makes the range exactly `b.len()` long: the copy has no length check.
        if let Some(dst) = self.at.checked_add(b.len()).and_then(|end| self.out.get_mut(self.at..end)) {
            dst.copy_from_slice(b);
        }
        self.at = self.at.saturating_add(b.len());
        self
    }

    /// Appends a `u8`.
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.bytes(&[v])
    }

    /// Appends a `u16`.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Appends a `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Appends a `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }

    /// Appends a [`Span`].
    pub fn span(&mut self, s: Span) -> &mut Self {
        self.bytes(&s.encode())
    }

    /// Appends the head of a [`List`] ([`List::ENCODED`] bytes).
    pub fn list<T>(&mut self, l: &List<T>) -> &mut Self {
        self.u32(l.links.head).u32(l.links.tail).u32(l.links.len)
    }
}

/// Little-endian field reader for [`Record::decode`].
pub struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    /// Reads from the start of `bytes`.
    #[inline(always)]
    pub fn new(bytes: &'b [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    // Inlined, with the field reads below, into each record's `decode`: at `opt-level = "z"`
    // every field would be a call otherwise (a tenth more instructions in the firmware's loads).
    #[inline(always)]
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.at.checked_add(N).and_then(|end| self.bytes.get(self.at..end)) {
            out.copy_from_slice(src);
        }
        self.at = self.at.saturating_add(N);
        out
    }

    /// The next `u8`.
    #[inline(always)]
    pub fn u8(&mut self) -> u8 {
        let [b] = self.take::<1>();
        b
    }

    /// The next `u16`.
    #[inline(always)]
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }

    /// The next `u32`.
    #[inline(always)]
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }

    /// The next `u64`.
    #[inline(always)]
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }

    /// The next [`Span`].
    #[inline(always)]
    pub fn span(&mut self) -> Span {
        Span::decode(self.take())
    }

    /// The next [`List`] head.
    pub fn list<T>(&mut self) -> List<T> {
        let links = Links { head: self.u32(), tail: self.u32(), len: self.u32() };
        List { links, _t: core::marker::PhantomData }
    }
}

/// "No record": the end of a list, an absent link.
pub const NIL: u32 = u32::MAX;

/// A singly linked list of records of one type in an [`Arena`], in insertion order. The list
/// itself is two `u32`s; each record is prefixed by the position of the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct List<T> {
    links: Links,
    _t: core::marker::PhantomData<fn() -> T>,
}

/// The links of a [`List`], whatever its record type: what does not depend on the type is
/// compiled once, not once per record type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Links {
    head: u32,
    tail: u32,
    len: u32,
}

impl Links {
    /// Makes the record at `at` the last one.
    #[inline(never)]
    fn append(&mut self, arena: &mut Arena<'_>, at: u32) {
        arena.write(at, &NIL.to_le_bytes());
        if self.tail == NIL {
            self.head = at;
        } else {
            arena.write(self.tail, &at.to_le_bytes());
        }
        self.tail = at;
        self.len = self.len.saturating_add(1);
    }

    /// Takes the record at `pos` out (see [`List::unlink`]).
    #[inline(never)]
    fn unlink(&mut self, arena: &mut Arena<'_>, pos: u32) -> bool {
        let mut prev = NIL;
        let mut at = self.head;
        for _ in 0..self.len {
            if at == NIL {
                break;
            }
            let next = arena.u32_at(at);
            if at == pos {
                if prev == NIL {
                    self.head = next;
                } else {
                    arena.write(prev, &next.to_le_bytes());
                }
                if self.tail == pos {
                    self.tail = prev;
                }
                self.len = self.len.saturating_sub(1);
                return true;
            }
            prev = at;
            at = next;
        }
        false
    }

    /// Keeps the records at the positions `keep` says yes to (see [`List::retain`]).
    #[inline(never)]
    fn retain(&mut self, arena: &mut Arena<'_>, keep: &mut dyn FnMut(&Arena<'_>, u32) -> bool) {
        let mut prev = NIL;
        let mut at = self.head;
        let mut kept = 0u32;
        for _ in 0..self.len {
            if at == NIL {
                break;
            }
            let next = arena.u32_at(at);
            if keep(arena, at) {
                if prev == NIL {
                    self.head = at;
                } else {
                    arena.write(prev, &at.to_le_bytes());
                }
                prev = at;
                kept = kept.saturating_add(1);
            }
            at = next;
        }
        if prev == NIL {
            self.head = NIL;
        } else {
            arena.write(prev, &NIL.to_le_bytes());
        }
        self.tail = prev;
        self.len = kept;
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> List<T> {
    /// Bytes of a list head stored in a record ([`Writer::list`]).
    pub const ENCODED: usize = 12;

    /// The empty list.
    pub const fn new() -> Self {
        Self { links: Links { head: NIL, tail: NIL, len: 0 }, _t: core::marker::PhantomData }
    }

    /// Records in the list.
    pub fn len(&self) -> u32 {
        self.links.len
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.links.len == 0
    }

    /// The position of the first record ([`NIL`] when empty).
    pub fn first(&self) -> u32 {
        self.links.head
    }

    /// The position of the record after the one at `pos` ([`NIL`] at the end).
    pub fn next_after(arena: &Arena<'_>, pos: u32) -> u32 {
        arena.u32_at(pos)
    }
}

impl<T: Record> List<T> {
    /// Appends `value` at the bottom of the arena; returns its position (for [`List::get`]
    /// and [`List::set`]).
    pub fn push(&mut self, arena: &mut Arena<'_>, value: &T) -> Result<u32, ErrorKind> {
        let at = arena.alloc(4usize.saturating_add(T::SIZE))?;
        self.link(arena, at, value);
        Ok(at)
    }

    /// Appends `value` in a slot allocated before (one a record left for good: its bytes are
    /// overwritten).
    pub fn relink(&mut self, arena: &mut Arena<'_>, at: u32, value: &T) {
        self.link(arena, at, value);
    }

    /// Appends `value` followed by `tail` (its name), in one allocation: the record encodes
    /// the tail's length only and learns where it is when read ([`Record::tail_at`]).
    pub fn push_with_tail(&mut self, arena: &mut Arena<'_>, value: &T, tail: &[u8]) -> Result<u32, ErrorKind> {
        self.push_with_tails(arena, value, [&[], tail])
    }

    /// Appends `value` followed by the two parts of its tail, one after the other.
    pub fn push_with_tails(&mut self, arena: &mut Arena<'_>, value: &T, tail: [&[u8]; 2]) -> Result<u32, ErrorKind> {
        let [head, rest] = tail;
        let len = head.len().saturating_add(rest.len());
        if len > Span::MAX_LEN {
            return Err(too_long());
        }
        let at = arena.alloc(4usize.saturating_add(T::SIZE).saturating_add(len))?;
        self.link(arena, at, value);
        let tail_at = Self::tail_of(at);
        arena.write(tail_at, head);
        // Below `Span::MAX_LEN`, checked above.
        arena.write(tail_at.saturating_add(head.len() as u32), rest);
        Ok(at)
    }

    /// Where the tail of the record at `pos` starts.
    fn tail_of(pos: u32) -> u32 {
        pos.saturating_add(4).saturating_add(T::SIZE as u32)
    }

    /// Appends `value` in the arena's top (scratch) part.
    pub fn push_top(&mut self, arena: &mut Arena<'_>, value: &T) -> Result<u32, ErrorKind> {
        let at = arena.alloc_top(4usize.saturating_add(T::SIZE))?;
        self.link(arena, at, value);
        Ok(at)
    }

    fn link(&mut self, arena: &mut Arena<'_>, at: u32, value: &T) {
        self.set(arena, at, value);
        self.links.append(arena, at);
    }

    /// Takes the record at `pos` out of the list (its bytes stay where they are, so positions
    /// other records keep of it stay valid). Returns false if it is not in the list.
    pub fn unlink(&mut self, arena: &mut Arena<'_>, pos: u32) -> bool {
        self.links.unlink(arena, pos)
    }

    /// Keeps only the records `keep` says yes to, in order; the others leave the list (their
    /// bytes stay, as [`List::unlink`]'s).
    pub fn retain(&mut self, arena: &mut Arena<'_>, mut keep: impl FnMut(&T) -> bool) {
        self.links.retain(arena, &mut |arena, at| keep(&Self::read(arena, at)));
    }

    /// The record at `pos`.
    pub fn get(&self, arena: &Arena<'_>, pos: u32) -> T {
        Self::read(arena, pos)
    }

    /// The record at `pos` (of any list of `T`).
    // Not inlined: one copy per record type, not one per loop over a list (some forty).
    #[inline(never)]
    fn read(arena: &Arena<'_>, pos: u32) -> T {
        let mut value = T::decode(arena.bytes(Span { at: pos.saturating_add(4), len: T::SIZE as u32 }));
        value.tail_at(Self::tail_of(pos), arena);
        value
    }

    /// Overwrites the record at `pos`.
    #[inline(never)]
    pub fn set(&self, arena: &mut Arena<'_>, pos: u32, value: &T) {
        let mut tmp = [0u8; 128];
        // Records are small by design; a larger one is a programming error caught by the
        // record tests, and writes nothing rather than panicking.
        if let Some(buf) = tmp.get_mut(..T::SIZE) {
            value.encode(buf);
            arena.write(pos.saturating_add(4), buf);
        }
    }

    /// Calls `f` with every record in insertion order; a record `f` changed (returning true)
    /// is written back.
    pub fn update_each(&self, arena: &mut Arena<'_>, mut f: impl FnMut(u32, &mut T) -> bool) {
        let mut at = self.links.head;
        for _ in 0..self.links.len {
            if at == NIL {
                break;
            }
            let next = Self::next_after(arena, at);
            let mut rec = self.get(arena, at);
            if f(at, &mut rec) {
                self.set(arena, at, &rec);
            }
            at = next;
        }
    }

    /// `(position, record)` in insertion order. The iterator borrows the arena only: a list
    /// head is a copy, so a record's list can be walked from the record.
    pub fn iter<'l, 'b>(&self, arena: &'l Arena<'b>) -> Iter<'l, 'b, T> {
        Iter { arena, at: self.links.head, left: self.links.len, _t: core::marker::PhantomData }
    }
}

/// The records of a [`List`], in insertion order ([`List::iter`]).
pub struct Iter<'l, 'b, T> {
    arena: &'l Arena<'b>,
    at: u32,
    /// Steps left: bounded by the count, so a damaged link can never loop.
    left: u32,
    _t: core::marker::PhantomData<fn() -> T>,
}

impl<T: Record> Iterator for Iter<'_, '_, T> {
    type Item = (u32, T);

    // Inlined into each loop, as a closure would be at `opt-level = "s"`: a step is a call at
    // `"z"` otherwise (the record read itself stays one call per record type).
    #[inline(always)]
    fn next(&mut self) -> Option<(u32, T)> {
        if self.left == 0 || self.at == NIL {
            return None;
        }
        self.left = self.left.saturating_sub(1);
        let here = self.at;
        self.at = List::<T>::next_after(self.arena, here);
        Some((here, List::<T>::read(self.arena, here)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    extern crate std;

    use super::*;

    /// A fixed-size read (in place on a host) gives what `read_into` gives, at every position:
    /// in the bottom part, in the top, across the free gap, past the end.
    #[test]
    fn read_is_read_into_everywhere() {
        let mut buf = [0u8; 96];
        let mut arena = Arena::new(&mut buf);
        arena.push_bytes(&core::array::from_fn::<u8, 40, _>(|i| i as u8 + 1)).unwrap();
        let top = arena.alloc_top(24).unwrap();
        arena.write(top, &core::array::from_fn::<u8, 24, _>(|i| 200 - i as u8));
        fn check<const N: usize>(arena: &Arena<'_>) {
            for at in (0..110u32).chain([u32::MAX - 2, u32::MAX]) {
                let mut want = [0u8; N];
                arena.read_into(at, &mut want);
                assert_eq!(arena.read::<N>(at), want, "N {N} at {at}");
            }
        }
        check::<1>(&arena);
        check::<4>(&arena);
        check::<6>(&arena);
        check::<8>(&arena);
        check::<33>(&arena);
    }

    /// Moving bytes down in non-overlapping pieces gives what `copy_within` gives, for every
    /// length and distance, including a distance past the end.
    #[test]
    fn move_down_is_copy_within_to_the_front() {
        for len in 0..40usize {
            for from in 0..45usize {
                let original: std::vec::Vec<u8> = (0..len).map(|i| i as u8 ^ 0x5a).collect();
                let mut want = original.clone();
                if from <= len {
                    want.copy_within(from.., 0);
                }
                let mut got = original.clone();
                move_down(&mut got, from);
                assert_eq!(got, want, "len {len} from {from}");
                // The firmware's way, tested on every target.
                let mut got = original.clone();
                move_down_in_pieces(&mut got, from);
                assert_eq!(got, want, "in pieces: len {len} from {from}");
            }
        }
    }

    #[derive(Debug, PartialEq)]
    struct Pair {
        name: Span,
        size: u64,
    }

    impl Record for Pair {
        const SIZE: usize = Span::ENCODED + 8;
        fn encode(&self, out: &mut [u8]) {
            Writer::new(out).span(self.name).u64(self.size);
        }
        fn decode(bytes: &[u8]) -> Self {
            let mut r = Reader::new(bytes);
            Pair { name: r.span(), size: r.u64() }
        }
    }

    #[test]
    fn a_run_longer_than_a_span_can_say_is_refused_not_cut() {
        let mut buf = std::vec![0u8; 70_000];
        let mut arena = Arena::new(&mut buf);
        let long = "x".repeat(Span::MAX_LEN + 1);
        let e = arena.push_str(&long).unwrap_err();
        assert!(matches!(e, ErrorKind::Capacity(c) if c.capacity == 65_535), "{e:?}");
        assert_eq!(arena.push_str_top(&long).unwrap_err(), e);
        assert_eq!(arena.used(), 0);
        let most = "y".repeat(Span::MAX_LEN);
        let span = arena.push_str(&most).unwrap();
        assert_eq!(Span::decode(span.encode()), span);
        assert_eq!(arena.str(span).len(), Span::MAX_LEN);
    }

    #[test]
    fn unlinked_records_leave_the_list_but_keep_their_place() {
        let mut buf = [0u8; 512];
        let mut arena = Arena::new(&mut buf);
        let mut list = List::<Pair>::new();
        let pos: std::vec::Vec<u32> =
            (0..4).map(|i| list.push(&mut arena, &Pair { name: Span::EMPTY, size: i }).unwrap()).collect();
        let sizes =
            |list: &List<Pair>, arena: &Arena<'_>| list.iter(arena).map(|(_, p)| p.size).collect::<std::vec::Vec<_>>();
        assert!(list.unlink(&mut arena, pos[1]));
        assert_eq!(sizes(&list, &arena), [0, 2, 3]);
        assert!(list.unlink(&mut arena, pos[3]), "the tail");
        assert!(list.unlink(&mut arena, pos[0]), "the head");
        assert_eq!(sizes(&list, &arena), [2]);
        assert!(!list.unlink(&mut arena, pos[0]), "already out");
        assert_eq!(list.get(&arena, pos[1]).size, 1, "still readable by position");
        list.push(&mut arena, &Pair { name: Span::EMPTY, size: 9 }).unwrap();
        assert_eq!(sizes(&list, &arena), [2, 9]);
        assert_eq!(list.len(), 2);
        for i in 10..14 {
            list.push(&mut arena, &Pair { name: Span::EMPTY, size: i }).unwrap();
        }
        list.retain(&mut arena, |p| p.size % 2 == 1);
        assert_eq!(sizes(&list, &arena), [9, 11, 13]);
        list.push(&mut arena, &Pair { name: Span::EMPTY, size: 20 }).unwrap();
        assert_eq!(sizes(&list, &arena), [9, 11, 13, 20], "the tail follows");
        list.retain(&mut arena, |_| false);
        assert!(list.is_empty());
        assert_eq!(sizes(&list, &arena), std::vec::Vec::<u64>::new());
        list.push(&mut arena, &Pair { name: Span::EMPTY, size: 1 }).unwrap();
        assert_eq!(sizes(&list, &arena), [1]);
    }

    #[test]
    fn a_walk_along_a_damaged_link_stops_at_the_count() {
        let mut buf = [0u8; 256];
        let mut arena = Arena::new(&mut buf);
        let mut list: List<Pair> = List::new();
        let pos: std::vec::Vec<u32> =
            (0..3).map(|i| list.push(&mut arena, &Pair { name: Span::EMPTY, size: i }).unwrap()).collect();
        // The second record's link (its first 4 bytes) points back at the first: a cycle.
        arena.write(pos[1], &pos[0].to_le_bytes());
        let sizes: std::vec::Vec<u64> = list.iter(&arena).map(|(_, p)| p.size).collect();
        assert_eq!(sizes, [0, 1, 0], "three steps, as the list counts, then the end");
        // A link to nowhere ends the walk early.
        arena.write(pos[0], &NIL.to_le_bytes());
        assert_eq!(list.iter(&arena).count(), 1);
    }

    #[test]
    fn strings_and_records_round_trip_in_order() {
        let mut buf = [0u8; 256];
        let mut arena = Arena::new(&mut buf);
        let mut list: List<Pair> = List::new();
        for (i, name) in ["a.npy", "bb.npy", "ccc.npy"].into_iter().enumerate() {
            let name = arena.push_str(name).unwrap();
            list.push(&mut arena, &Pair { name, size: i as u64 * 10 }).unwrap();
        }
        {
            let got: heapless::Vec<(&str, u64), 4> =
                list.iter(&arena).map(|(_, p)| (arena.str(p.name), p.size)).collect();
            assert_eq!(got.as_slice(), &[("a.npy", 0), ("bb.npy", 10), ("ccc.npy", 20)]);
        }
        let (pos, mut second) = list.iter(&arena).nth(1).unwrap();
        second.size = 99;
        list.set(&mut arena, pos, &second);
        assert_eq!(list.get(&arena, pos).size, 99);
        assert_eq!(list.len(), 3);
    }

    #[test]
    fn a_full_arena_says_how_much_was_needed() {
        let mut buf = [0u8; 16];
        let mut arena = Arena::new(&mut buf);
        arena.push_str("0123456789").unwrap();
        let e = arena.push_str("abcdefgh").unwrap_err();
        assert_eq!(e, ErrorKind::ArenaFull { capacity: 16, needed: 18 });
        assert_eq!(arena.used(), 10, "a refused push changes nothing");
    }

    #[test]
    fn release_to_drops_scratch_but_keeps_the_peak() {
        let mut buf = [0u8; 64];
        let mut arena = Arena::new(&mut buf);
        arena.push_str("keep").unwrap();
        let mark = arena.mark();
        arena.push_str("scratch scratch").unwrap();
        arena.release_to(mark);
        assert_eq!(arena.used(), 4);
        assert_eq!(arena.peak(), 19);
        let s = arena.push_str("x").unwrap();
        assert_eq!(s.at, 4);
    }

    #[test]
    fn top_scratch_is_released_whatever_the_bottom_gained() {
        let mut buf = [0u8; 64];
        let mut arena = Arena::new(&mut buf);
        let mark = arena.mark_top();
        let scratch = arena.push_str_top("scratch").unwrap();
        assert_eq!(scratch.at, 57);
        let kept = arena.push_str("kept").unwrap();
        assert_eq!(arena.str(scratch), "scratch");
        arena.release_top(mark);
        assert_eq!(arena.used(), 4);
        assert_eq!(arena.str(kept), "kept");
        assert_eq!(arena.str(scratch), "", "released scratch reads as empty");
        // The two parts meet: the bottom cannot grow into the top.
        arena.push_str_top(&"t".repeat(51)).unwrap();
        assert_eq!(arena.push_str("0123456789").unwrap_err(), ErrorKind::ArenaFull { capacity: 64, needed: 65 });
    }

    #[test]
    fn spans_outside_the_arena_read_as_empty() {
        let mut buf = [0u8; 8];
        let arena = Arena::new(&mut buf);
        assert_eq!(arena.bytes(Span { at: 4, len: 100 }), b"");
        assert_eq!(arena.str(Span { at: u32::MAX, len: u32::MAX }), "");
    }
}
