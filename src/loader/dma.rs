//! DMA names (spec §8.2): a DMA block's `queue` names a queue set of its subgraph's
//! `def.json` `dma_queue`, a descriptor's `from` and `to` name variables of its `var`.
//!
//! Both sides stream and either can come first: real NEFFs put `PE.json` before `def.json` in
//! the tar (and a definition's own `dma` before its `var`), older ones `pool.json` after it.
//! What is remembered, in the arena, is what the tar order makes necessary, no more:
//!
//! - a reference met before its definition waits as a [`PendingRef`], once per member and
//!   name (its first use: where it was, its key path, the name's tail), in the device's
//!   notebook when the `Hal` lends one, else in the arena, and is checked when the definition
//!   has been read;
//! - a definition's queue and variable names are collected as 64-bit fingerprints in the
//!   arena's scratch while it streams, sorted at its end, and kept (8 bytes a name) only when
//!   an engine JSON it names is still to come; a reference read then is checked on the spot.
//!
//! So a real NEFF (engine JSONs first, `dma: []` when the hardware generates descriptors)
//! keeps nothing, and a definition's 100,000 variables cost 800 KB of scratch while it is read,
//! released at its end unless an engine JSON follows. A fingerprint (XXH3-64 of the name, the
//! payload digest's function, xor a constant of its namespace) stands for the name: two
//! different names share one with probability 2⁻⁶⁴ per pair, the only case in which an
//! unresolved name would pass; a queue and a variable of one name never do.
//!
//! This module holds the records, the name table and the references' keys; the walk, which
//! reads the manifests, collects, checks and settles them (`walk.rs`), and the index keeps the
//! records: nothing here calls back into either.

use core::cell::RefCell;

use crate::arena::{Arena, Reader, Writer, NIL};
use crate::error::{Error, ErrorKind, HalError, Stage};
use crate::hal::{DeviceError, Hal};
use crate::manifest::{DmaBlock, DmaDesc, ManifestError};

/// What a DMA name must resolve to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameSpace {
    /// A queue set of `dma_queue`.
    Queue = 1,
    /// A variable of `var`.
    Var = 2,
}

/// The fingerprint of `name` in `space`: the digest every payload gets
/// ([`digest64`](crate::digest::digest64), so the image links one XXH3 and no seeded copy),
/// xor a constant of the namespace. Two names of one namespace share a fingerprint only if
/// their digests collide; a queue `n` and a variable `n` never do (the constants differ).
pub(crate) fn fingerprint(space: NameSpace, name: &str) -> u64 {
    let salt = match space {
        NameSpace::Queue => 0x9E37_79B9_7F4A_7C15,
        NameSpace::Var => 0xC2B2_AE3D_27D4_EB4F,
    };
    crate::digest::digest64(name.as_bytes()) ^ salt
}

/// Bytes of one fingerprint in a name table.
pub(crate) const FINGERPRINT: usize = 8;

/// A definition's names: sorted fingerprints, `count` of them at `at` in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NameTable {
    pub at: u32,
    pub count: u32,
}

impl NameTable {
    /// Whether `fp` is in the table (a binary search over the arena bytes).
    pub fn contains(&self, arena: &Arena<'_>, fp: u64) -> bool {
        let (mut lo, mut hi) = (0u32, self.count);
        while lo < hi {
            // lo < hi, so neither the midpoint nor `mid + 1` can overflow.
            let mid = lo.saturating_add(hi.saturating_sub(lo) / 2);
            // Outside the table (a corrupt record) the arena reads zeros: a miss, not a panic.
            let at = self.at.saturating_add(mid.saturating_mul(FINGERPRINT as u32));
            match arena.u64_at(at).cmp(&fp) {
                core::cmp::Ordering::Less => lo = mid.saturating_add(1),
                core::cmp::Ordering::Greater => hi = mid,
                core::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

/// Sorts the little-endian `u64`s of `bytes` in place (heapsort: no allocation, no recursion,
/// `O(n log n)` whatever the input).
// `n / 2` and `n - 1`, with `n` a count of fingerprints in memory: no overflow.
#[allow(clippy::arithmetic_side_effects)]
pub(crate) fn sort_fingerprints(bytes: &mut [u8]) {
    let n = bytes.len() / FINGERPRINT;
    for root in (0..n / 2).rev() {
        sift_down(bytes, root, n);
    }
    for end in (1..n).rev() {
        swap_fingerprints(bytes, 0, end);
        sift_down(bytes, 0, end);
    }
}

/// The bytes of fingerprint `i`.
// Only called with `i < bytes.len() / 8` (the sort's indices): `8 * (i + 1)` cannot overflow.
#[allow(clippy::arithmetic_side_effects)]
fn fingerprint_range(i: usize) -> core::ops::Range<usize> {
    i * FINGERPRINT..(i + 1) * FINGERPRINT
}

/// Fingerprint `i` (0 past the end: never, the indices are in range).
fn fingerprint_at(b: &[u8], i: usize) -> u64 {
    let mut v = [0u8; FINGERPRINT];
    if let Some(s) = b.get(fingerprint_range(i)) {
        v.copy_from_slice(s);
    }
    u64::from_le_bytes(v)
}

fn swap_fingerprints(b: &mut [u8], i: usize, j: usize) {
    let (vi, vj) = (fingerprint_at(b, i), fingerprint_at(b, j));
    if let Some(s) = b.get_mut(fingerprint_range(i)) {
        s.copy_from_slice(&vj.to_le_bytes());
    }
    if let Some(s) = b.get_mut(fingerprint_range(j)) {
        s.copy_from_slice(&vi.to_le_bytes());
    }
}

/// Sifts fingerprint `root` down within the first `end` (one copy for both phases of the sort).
// `root < end <= bytes.len() / 8`: `2 * root + 2` cannot overflow.
#[inline(never)]
#[allow(clippy::arithmetic_side_effects)]
fn sift_down(b: &mut [u8], mut root: usize, end: usize) {
    loop {
        let left = 2 * root + 1;
        if left >= end {
            break;
        }
        let right = left + 1;
        let child = if right < end && fingerprint_at(b, right) > fingerprint_at(b, left) { right } else { left };
        if fingerprint_at(b, child) <= fingerprint_at(b, root) {
            break;
        }
        swap_fingerprints(b, root, child);
        root = child;
    }
}

/// Which key of a DMA block or descriptor a reference is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefKey {
    /// A block's `queue`.
    Queue,
    /// A descriptor's `from`.
    From,
    /// A descriptor's `to`.
    To,
}

impl RefKey {
    fn code(self) -> u8 {
        match self {
            RefKey::Queue => 0,
            RefKey::From => 1,
            RefKey::To => 2,
        }
    }

    fn from_code(c: u8) -> Self {
        match c {
            0 => RefKey::Queue,
            1 => RefKey::From,
            _ => RefKey::To,
        }
    }

    /// The JSON key.
    pub fn key(self) -> &'static str {
        match self {
            RefKey::Queue => DmaBlock::KEY_QUEUE,
            RefKey::From => DmaDesc::KEY_FROM,
            RefKey::To => DmaDesc::KEY_TO,
        }
    }

    /// The namespace the name must be found in.
    pub fn space(self) -> NameSpace {
        match self {
            RefKey::Queue => NameSpace::Queue,
            RefKey::From | RefKey::To => NameSpace::Var,
        }
    }

    /// The error for `name` not found (`elided`: `name` is the tail of a longer one).
    pub fn unresolved(self, name: &str, elided: bool) -> ManifestError {
        let name = crate::error::Text::new_elided(name, elided);
        match self {
            RefKey::Queue => ManifestError::UnknownDmaQueue(name),
            RefKey::From | RefKey::To => ManifestError::UnknownDmaVariable { to: self == RefKey::To, name },
        }
    }
}

/// The notebook as the reading path sees it: device memory the loader keeps notes in
/// ([`Hal::notebook_len`](crate::hal::Hal::notebook_len)), without the device's type, so that
/// one copy of the manifest readers serves every [`Hal`](crate::hal::Hal).
pub(crate) trait Notebook {
    /// Writes `bytes` at byte `at`.
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), ErrorKind>;
    /// Reads `out.len()` bytes at byte `at`.
    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), ErrorKind>;
}

/// No notebook: every pending reference waits in the arena.
#[cfg(test)]
pub(crate) struct NoNotebook;

#[cfg(test)]
impl Notebook for NoNotebook {
    fn note(&mut self, _: u64, _: &[u8]) -> Result<(), ErrorKind> {
        Ok(())
    }
    fn recall(&self, _: u64, _: &mut [u8]) -> Result<(), ErrorKind> {
        Ok(())
    }
}

/// A device's notebook shared with whatever else writes to the device during a read (the tee
/// staging a member read both ways): each call borrows the device for itself alone.
pub(crate) struct HalNotebook<'c, 'h, H: Hal>(pub &'c RefCell<&'h mut H>);

impl<H: Hal> Notebook for HalNotebook<'_, '_, H> {
    fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), ErrorKind> {
        let mut hal = self.0.try_borrow_mut().map_err(|_| ErrorKind::Hal(HalError::NotebookBusy))?;
        hal.note(at, bytes).map_err(|e| ErrorKind::Hal(e.kind()))
    }
    fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
        let hal = self.0.try_borrow().map_err(|_| ErrorKind::Hal(HalError::NotebookBusy))?;
        hal.recall(at, out).map_err(|e| ErrorKind::Hal(e.kind()))
    }
}

/// Bucket heads of the pending references' hash chains (a power of two): 1 KiB of arena,
/// taken when the first reference must wait. A chain holds the distinct (member, name) pairs
/// whose key falls in its bucket: a few dozen for the largest real NEFF (6,376 pairs).
const BUCKETS: usize = 256;

/// A Rust host's bucket heads (`std`; a controller's loader state is held under 64 KiB, and the
/// C ABI's is a stack size its callers are told), kept in [`Pending`] itself: 4,096 (16 KiB of
/// loader state), so that a chain holds one or two pairs. With 256, every use of a name walked
/// a chain of about 25 records at random places in the arena: the largest real NEFF's uses
/// walked 300,000 links, 7 % of its load's time. The arena still gives the controller's table
/// its 1 KiB, unused, so that a host's arena figures are a controller's (`Loader::needs`,
/// `neff load --budget`).
#[cfg(feature = "std")]
const HOST_BUCKETS: usize = 4096;

/// The buckets a fingerprint is spread over, and the top bits of it that pick one.
#[cfg(feature = "std")]
const HEADS: usize = HOST_BUCKETS;
#[cfg(not(feature = "std"))]
const HEADS: usize = BUCKETS;
const HEAD_SHIFT: u32 = u64::BITS - HEADS.trailing_zeros();
const HEAD_MASK: u32 = HEADS as u32 - 1;

/// The bit of a pending slot that says it is in the notebook (else it is an arena position).
const FAR: u32 = 1 << 31;

/// Bytes of a pending reference's fixed part: next, chain, by (`u32` each), key (`u8`),
/// fingerprint and offset (`u64` each), the lengths of the kept path and name tail (`u8`
/// each), and whether the name was longer than its tail (`u8`).
const HEADER: usize = 4 + 4 + 4 + 1 + 8 + 8 + 1 + 1 + 1;

/// Where the flags byte is in a pending reference: the header's last.
#[cfg(feature = "name-tables")]
const FLAGS_AT: u32 = HEADER as u32 - 1;
/// The flags byte's bit for a name longer than its kept tail.
const ELIDED: u8 = 1;
/// The flags byte's bit for a reference whose definition was met.
const RESOLVED: u8 = 2;

/// Bytes of a name kept for the error: what its [`Name`](crate::error::Name) shows.
pub(crate) const NAME_TAIL: usize = 16;

/// A DMA reference waiting for the definition it names into, one per distinct name a member
/// uses (the fixed part; the key path and the name's tail follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PendingRef {
    /// The next pending reference, in the order they were met ([`NIL`]: the last).
    pub next: u32,
    /// The next of its hash chain.
    chain: u32,
    /// The manifest record of the member holding the reference.
    pub by: u32,
    pub key: RefKey,
    /// The name's [`fingerprint`] in the key's namespace.
    pub fp: u64,
    /// Offset just past the block or descriptor in its member (its first use of the name).
    pub offset: u64,
    path_len: u8,
    name_len: u8,
    name_elided: bool,
    /// A definition read since gives the name.
    pub resolved: bool,
}

/// The fields of a [`PendingRef`] a chain walk compares ([`Pending::link`]).
#[cfg(any(feature = "name-tables", test))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Link {
    chain: u32,
    by: u32,
    fp: u64,
    /// The header's last byte: whether the name was elided (bit 0) and resolved (bit 1).
    flags: u8,
}

#[cfg(any(feature = "name-tables", test))]
impl Link {
    fn resolved(&self) -> bool {
        self.flags & RESOLVED != 0
    }

    /// The link of an encoded header: [`PendingRef::decode`]'s fields, at their offsets.
    fn of(h: &[u8; HEADER]) -> Self {
        let [_, _, _, _, c0, c1, c2, c3, b0, b1, b2, b3, _, f0, f1, f2, f3, f4, f5, f6, f7, .., flags] = *h;
        Link {
            chain: u32::from_le_bytes([c0, c1, c2, c3]),
            by: u32::from_le_bytes([b0, b1, b2, b3]),
            fp: u64::from_le_bytes([f0, f1, f2, f3, f4, f5, f6, f7]),
            flags,
        }
    }
}

impl PendingRef {
    fn encode(&self, out: &mut [u8; HEADER]) {
        Writer::new(out)
            .u32(self.next)
            .u32(self.chain)
            .u32(self.by)
            .u8(self.key.code())
            .u64(self.fp)
            .u64(self.offset)
            .u8(self.path_len)
            .u8(self.name_len)
            .u8(self.flags());
    }

    /// The header's last byte: whether the name was elided (bit 0) and resolved (bit 1).
    fn flags(&self) -> u8 {
        (if self.name_elided { ELIDED } else { 0 }) | (if self.resolved { RESOLVED } else { 0 })
    }

    fn decode(bytes: &[u8; HEADER]) -> Self {
        let mut r = Reader::new(bytes);
        PendingRef {
            next: r.u32(),
            chain: r.u32(),
            by: r.u32(),
            key: RefKey::from_code(r.u8()),
            fp: r.u64(),
            offset: r.u64(),
            path_len: r.u8(),
            name_len: r.u8(),
            name_elided: false,
            resolved: false,
        }
        .with_flags(r.u8())
    }

    fn with_flags(mut self, flags: u8) -> Self {
        self.name_elided = flags & ELIDED != 0;
        self.resolved = flags & RESOLVED != 0;
        self
    }

    /// Bytes of the whole record.
    fn size(&self) -> usize {
        HEADER.saturating_add(usize::from(self.path_len)).saturating_add(usize::from(self.name_len))
    }
}

/// The DMA references met before the definition they name into (spec §8.2), kept per
/// distinct name a member uses, not per reference: a real training NEFF's engine JSONs make
/// 30,000 references over a few hundred names each, and they come before their `def.json`.
/// Each keeps its first use (offset, key path, the name's tail), so that an unresolved name
/// is reported exactly where it was first met. They wait in the device's notebook when it
/// lends one, growing down from its end (the landings grow up from its start), else in the
/// arena; the hash chains' heads are in the arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pending {
    /// Arena position of the bucket heads ([`NIL`]: none yet).
    buckets: u32,
    /// The first and last pending reference in the order they were met.
    first: u32,
    last: u32,
    /// Pending references.
    count: u32,
    /// The notebook's end, and the low end of what the pending references use of it.
    far_top: u64,
    far_low: u64,
    /// The most notebook bytes the pending references used at once.
    far_peak: u64,
    /// A host's bucket heads ([`HOST_BUCKETS`]), in place of the arena's.
    #[cfg(feature = "std")]
    heads: [u32; HOST_BUCKETS],
}

impl Default for Pending {
    fn default() -> Self {
        Self::new(0)
    }
}

impl Pending {
    /// No pending reference, over a notebook of `notebook_len` bytes (0: the arena only).
    pub fn new(notebook_len: u64) -> Self {
        // A far slot is its distance below the notebook's end, under the `FAR` bit.
        let top = notebook_len;
        Self {
            buckets: NIL,
            first: NIL,
            last: NIL,
            count: 0,
            far_top: top,
            far_low: top,
            far_peak: 0,
            #[cfg(feature = "std")]
            heads: [NIL; HOST_BUCKETS],
        }
    }

    /// Pending references.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// The first pending reference ([`NIL`]: none).
    pub fn first(&self) -> u32 {
        self.first
    }

    /// The lowest notebook byte the pending references use (the notebook's end: none).
    pub fn far_low(&self) -> u64 {
        self.far_low
    }

    /// The most notebook bytes they used at once.
    pub fn far_peak(&self) -> u64 {
        self.far_peak
    }

    fn far_at(&self, slot: u32) -> Option<u64> {
        (slot & FAR != 0 && slot != NIL).then(|| self.far_top.saturating_sub(u64::from(slot & !FAR)))
    }

    /// Reads `out.len()` bytes at byte `off` of the record in `slot`.
    fn read(&self, arena: &Arena<'_>, nb: &dyn Notebook, slot: u32, off: u32, out: &mut [u8]) -> Result<(), ErrorKind> {
        match self.far_at(slot) {
            Some(at) => nb.recall(at.saturating_add(u64::from(off)), out),
            None => {
                arena.read_into(slot.saturating_add(off), out);
                Ok(())
            }
        }
    }

    /// Writes `bytes` at byte `off` of the record in `slot`.
    fn write(
        &self,
        arena: &mut Arena<'_>,
        nb: &mut dyn Notebook,
        slot: u32,
        off: u32,
        bytes: &[u8],
    ) -> Result<(), ErrorKind> {
        match self.far_at(slot) {
            Some(at) => nb.note(at.saturating_add(u64::from(off)), bytes),
            None => {
                arena.write(slot.saturating_add(off), bytes);
                Ok(())
            }
        }
    }

    /// The pending reference in `slot`.
    pub fn get(&self, arena: &Arena<'_>, nb: &dyn Notebook, slot: u32) -> Result<PendingRef, ErrorKind> {
        let mut bytes = [0u8; HEADER];
        self.read(arena, nb, slot, 0, &mut bytes)?;
        Ok(PendingRef::decode(&bytes))
    }

    /// What a chain walk compares of the pending reference in `slot`: [`Pending::get`]'s
    /// fields, fewer of them. A host (`name-tables`) reads them from the arena without
    /// decoding the rest: a real training NEFF's references walk 300,000 chain links.
    #[cfg(any(feature = "name-tables", test))]
    fn link(&self, arena: &Arena<'_>, nb: &dyn Notebook, slot: u32) -> Result<Link, ErrorKind> {
        if self.far_at(slot).is_none() {
            return Ok(Link::of(&arena.read::<HEADER>(slot)));
        }
        self.get(arena, nb, slot).map(|r| Link { chain: r.chain, by: r.by, fp: r.fp, flags: r.flags() })
    }

    fn set(&self, arena: &mut Arena<'_>, nb: &mut dyn Notebook, slot: u32, r: &PendingRef) -> Result<(), ErrorKind> {
        let mut bytes = [0u8; HEADER];
        r.encode(&mut bytes);
        self.write(arena, nb, slot, 0, &bytes)
    }

    /// The bucket of a name's uses, by every member: a definition's name resolves them at
    /// once.
    fn bucket(fp: u64) -> u32 {
        // The top bits: the fingerprint is a digest, its high bits as good as any.
        (fp >> HEAD_SHIFT) as u32 & HEAD_MASK
    }

    /// The arena position of the controller's bucket `b`.
    #[cfg(not(feature = "std"))]
    fn bucket_at(&self, b: u32) -> u32 {
        self.buckets.saturating_add(b.saturating_mul(4))
    }

    /// The first pending reference of bucket `b`'s chain ([`NIL`]: none).
    // Inlined, as [`Pending::set_head`]: in the image each is one arena access in place
    // (called as functions, they took 80 bytes more of its measured flash).
    #[inline(always)]
    fn head(&self, arena: &Arena<'_>, b: u32) -> u32 {
        #[cfg(feature = "std")]
        let _ = arena;
        #[cfg(feature = "std")]
        return self.heads.get(b as usize).copied().unwrap_or(NIL);
        #[cfg(not(feature = "std"))]
        arena.u32_at(self.bucket_at(b))
    }

    #[inline(always)]
    fn set_head(&mut self, arena: &mut Arena<'_>, b: u32, slot: u32) {
        #[cfg(feature = "std")]
        {
            let _ = arena;
            if let Some(head) = self.heads.get_mut(b as usize) {
                *head = slot;
            }
        }
        #[cfg(not(feature = "std"))]
        arena.write(self.bucket_at(b), &slot.to_le_bytes());
    }

    /// Empties every chain.
    fn clear_heads(&mut self, arena: &mut Arena<'_>) {
        for b in 0..HEADS as u32 {
            self.set_head(arena, b, NIL);
        }
    }

    /// Makes reference `key` = `name` of member record `by`, at `offset` and key path `path`,
    /// wait for its definition, unless `by` already waits for that name (its first use is the
    /// one reported); `fp` is the name's [`fingerprint`] in the key's namespace. `floor`: the
    /// notebook bytes in use from its start (the landings'); the notebook's room is what lies
    /// between, the arena takes what does not fit there. The path is asked for only when the
    /// reference is kept: most uses repeat a name.
    #[allow(clippy::too_many_arguments)]
    pub fn wait<'p>(
        &mut self,
        arena: &mut Arena<'_>,
        nb: &mut dyn Notebook,
        floor: u64,
        by: u32,
        (key, fp): (RefKey, u64),
        offset: u64,
        path: impl FnOnce() -> &'p str,
        name: &str,
    ) -> Result<(), ErrorKind> {
        if self.buckets == NIL {
            self.buckets = arena.alloc(BUCKETS.saturating_mul(4))?;
            self.clear_heads(arena);
        }
        let bucket = Self::bucket(fp);
        let head = self.head(arena, bucket);
        let mut at = head;
        // A chain is no longer than the pending references: the count bounds the walk.
        for _ in 0..self.count {
            if at == NIL {
                break;
            }
            // A host reads the link alone; the image keeps one reading of records.
            #[cfg(feature = "name-tables")]
            let r = self.link(arena, nb, at)?;
            #[cfg(not(feature = "name-tables"))]
            let r = self.get(arena, nb, at)?;
            if r.by == by && r.fp == fp {
                return Ok(());
            }
            at = r.chain;
        }
        // The path is at most `KEY_PATH_TEXT` bytes (it is built in one); the name keeps the
        // tail its error shows.
        let path = path();
        let path = path.as_bytes().get(..path.len().min(u8::MAX as usize)).unwrap_or(&[]);
        let tail_start = {
            let mut s = name.len().saturating_sub(NAME_TAIL);
            while !name.is_char_boundary(s) {
                s = s.saturating_add(1);
            }
            s
        };
        let tail = name.as_bytes().get(tail_start..).unwrap_or(&[]);
        let rec = PendingRef {
            next: NIL,
            chain: head,
            by,
            key,
            fp,
            offset,
            path_len: path.len() as u8,
            name_len: tail.len() as u8,
            name_elided: tail_start > 0,
            resolved: false,
        };
        let size = rec.size();
        let slot = self.place(arena, floor, size)?;
        let mut header = [0u8; HEADER];
        rec.encode(&mut header);
        self.write(arena, nb, slot, 0, &header)?;
        self.write(arena, nb, slot, HEADER as u32, path)?;
        self.write(arena, nb, slot, HEADER.saturating_add(path.len()) as u32, tail)?;
        self.set_head(arena, bucket, slot);
        if self.last != NIL {
            let mut last = self.get(arena, nb, self.last)?;
            last.next = slot;
            self.set(arena, nb, self.last, &last)?;
        } else {
            self.first = slot;
        }
        self.last = slot;
        self.count = self.count.saturating_add(1);
        Ok(())
    }

    /// Marks every pending reference to the name of fingerprint `fp` resolved: the definition
    /// being read gives it. Done as the definition streams, so that it needs no table of its
    /// names for the references that came before it.
    /// Only the references of members `mine` accepts (by manifest record) are marked: a name
    /// of one subgraph's definition says nothing of another's.
    pub fn resolve(
        &mut self,
        arena: &mut Arena<'_>,
        nb: &mut dyn Notebook,
        fp: u64,
        mut mine: impl FnMut(&Arena<'_>, u32) -> bool,
    ) -> Result<(), ErrorKind> {
        if self.buckets == NIL {
            return Ok(());
        }
        let mut at = self.head(arena, Self::bucket(fp));
        for _ in 0..self.count {
            if at == NIL {
                break;
            }
            // A host reads the link alone and writes the flags byte alone; the image keeps one
            // reading and one writing of records.
            #[cfg(feature = "name-tables")]
            {
                let r = self.link(arena, nb, at)?;
                if r.fp == fp && !r.resolved() && mine(arena, r.by) {
                    self.write(arena, nb, at, FLAGS_AT, &[r.flags | RESOLVED])?;
                }
                at = r.chain;
            }
            #[cfg(not(feature = "name-tables"))]
            {
                let mut r = self.get(arena, nb, at)?;
                if r.fp == fp && !r.resolved && mine(arena, r.by) {
                    r.resolved = true;
                    self.set(arena, nb, at, &r)?;
                }
                at = r.chain;
            }
        }
        Ok(())
    }

    /// A slot of `size` bytes: below the notebook's part in use if it fits above `floor`,
    /// else in the arena.
    fn place(&mut self, arena: &mut Arena<'_>, floor: u64, size: usize) -> Result<u32, ErrorKind> {
        let low = self.far_low.checked_sub(size as u64).filter(|&l| l >= floor);
        let slot = low.map(|l| self.far_top.saturating_sub(l)).filter(|&d| d < u64::from(FAR));
        match (low, slot) {
            (Some(low), Some(distance)) => {
                self.far_low = low;
                self.far_peak = self.far_peak.max(self.far_top.saturating_sub(low));
                Ok(FAR | distance as u32)
            }
            _ => arena.alloc(size),
        }
    }

    /// The key path and name tail of the pending reference `r` in `slot`, for its error:
    /// `(path, name, whether the name was longer)`.
    pub fn texts<'b>(
        &self,
        arena: &Arena<'_>,
        nb: &dyn Notebook,
        slot: u32,
        r: &PendingRef,
        path: &'b mut [u8; 255],
        name: &'b mut [u8; NAME_TAIL],
    ) -> Result<(&'b str, &'b str, bool), ErrorKind> {
        let path = path.get_mut(..usize::from(r.path_len)).unwrap_or_default();
        self.read(arena, nb, slot, HEADER as u32, path)?;
        let name = name.get_mut(..usize::from(r.name_len)).unwrap_or_default();
        self.read(arena, nb, slot, HEADER.saturating_add(path.len()) as u32, name)?;
        let text = |b: &'b [u8]| core::str::from_utf8(b).unwrap_or("");
        Ok((text(path), text(name), r.name_elided))
    }

    /// Keeps the pending references for which `keep` holds, in their order, and lets the others
    /// go; the notebook's part is given back once none is left.
    pub fn retain(
        &mut self,
        arena: &mut Arena<'_>,
        nb: &mut dyn Notebook,
        mut keep: impl FnMut(&Arena<'_>, &PendingRef) -> bool,
    ) -> Result<(), ErrorKind> {
        if self.buckets == NIL {
            return Ok(());
        }
        self.clear_heads(arena);
        let (mut at, mut prev) = (self.first, NIL);
        let mut kept = 0u32;
        self.first = NIL;
        for _ in 0..self.count {
            if at == NIL {
                break;
            }
            let mut r = self.get(arena, nb, at)?;
            let next = r.next;
            if keep(arena, &r) {
                let bucket = Self::bucket(r.fp);
                r.chain = self.head(arena, bucket);
                r.next = NIL;
                self.set_head(arena, bucket, at);
                self.set(arena, nb, at, &r)?;
                if prev == NIL {
                    self.first = at;
                } else {
                    let mut p = self.get(arena, nb, prev)?;
                    p.next = at;
                    self.set(arena, nb, prev, &p)?;
                }
                prev = at;
                kept = kept.saturating_add(1);
            }
            at = next;
        }
        self.last = prev;
        self.count = kept;
        if kept == 0 {
            self.far_low = self.far_top;
        }
        Ok(())
    }
}

/// The error for reference `key` = `name` of the block or descriptor at `path`, unresolved.
pub(crate) fn unresolved_error(
    stage: Stage,
    member: &str,
    offset: u64,
    path: &str,
    key: RefKey,
    name: &str,
    elided: bool,
) -> Error {
    Error::in_member(stage, member, offset, ErrorKind::Manifest(key.unresolved(name, elided)))
        .with_key_path(&crate::manifest::rt::shown_path(path, false, Some(key.key())))
}

/// The names a DMA block or descriptor gives, by key.
pub(crate) fn block_refs(b: &DmaBlock) -> impl Iterator<Item = (RefKey, &str)> {
    // `instance_name` takes precedence over `queue` (§8.2) and names a ring instance, which
    // the spec does not tie to a `dma_queue` key: only a block without it is resolved.
    let queue = if b.instance_name.is_some() { None } else { b.queue.as_deref() };
    queue.map(|q| (RefKey::Queue, q)).into_iter()
}

/// The variables a DMA descriptor names.
pub(crate) fn desc_refs(d: &DmaDesc) -> impl Iterator<Item = (RefKey, &str)> {
    d.from.as_deref().map(|f| (RefKey::From, f)).into_iter().chain(core::iter::once((RefKey::To, d.to.as_str())))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    extern crate std;
    use super::*;
    use crate::arena::Span;
    use std::string::String;
    use std::vec::Vec;

    fn table(arena: &mut Arena<'_>, fps: &[u64]) -> NameTable {
        let mark = arena.mark_top();
        for fp in fps {
            let at = arena.alloc_top(FINGERPRINT).unwrap();
            arena.write(at, &fp.to_le_bytes());
        }
        let count = fps.len() as u32;
        let at = arena.keep_top(mark);
        let len = count as usize * FINGERPRINT;
        let mut bytes = arena.bytes(Span { at, len: len as u32 }).to_vec();
        sort_fingerprints(&mut bytes);
        arena.write(at, &bytes);
        NameTable { at, count }
    }

    #[test]
    fn heapsort_sorts_any_input() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for n in [0usize, 1, 2, 3, 7, 64, 1000] {
            let mut values: Vec<u64> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed % 50 // duplicates too
                })
                .collect();
            let mut bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            sort_fingerprints(&mut bytes);
            values.sort_unstable();
            let sorted: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
            assert_eq!(sorted, values, "n = {n}");
        }
    }

    #[test]
    fn a_table_finds_exactly_its_names() {
        let mut buf = [0u8; 4096];
        let mut arena = Arena::new(&mut buf);
        arena.push_str("bottom record").unwrap();
        let names = ["input0", "output0", "weight_17", "a.b"];
        let fps: Vec<u64> = names.iter().map(|n| fingerprint(NameSpace::Var, n)).collect();
        let t = table(&mut arena, &fps);
        for n in names {
            assert!(t.contains(&arena, fingerprint(NameSpace::Var, n)), "{n}");
            // The same name as a queue set is another name.
            assert!(!t.contains(&arena, fingerprint(NameSpace::Queue, n)), "{n} as a queue");
        }
        for n in ["input1", "", "output", "weight_170"] {
            assert!(!t.contains(&arena, fingerprint(NameSpace::Var, n)), "{n}");
        }
        // Moving the scratch down kept the bottom's record and made the table part of it.
        assert_eq!(arena.str(Span { at: 0, len: 13 }), "bottom record");
        assert_eq!(arena.used(), 13 + names.len() * FINGERPRINT);
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let mut buf = [0u8; 64];
        let arena = Arena::new(&mut buf);
        assert!(!NameTable { at: 0, count: 0 }.contains(&arena, 0));
    }

    /// A reference's key and its name's fingerprint, as [`Pending::wait`] takes them.
    fn keyed(key: RefKey, name: &str) -> (RefKey, u64) {
        (key, fingerprint(key.space(), name))
    }

    /// A notebook over a vector, counting its calls.
    struct VecNotebook(Vec<u8>);

    impl Notebook for VecNotebook {
        fn note(&mut self, at: u64, bytes: &[u8]) -> Result<(), ErrorKind> {
            self.0[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
            Ok(())
        }
        fn recall(&self, at: u64, out: &mut [u8]) -> Result<(), ErrorKind> {
            out.copy_from_slice(&self.0[at as usize..at as usize + out.len()]);
            Ok(())
        }
    }

    /// A pending reference as the tests see it: by, key, offset, path, name tail, elided.
    type Listed = (u32, RefKey, u64, String, String, bool);

    /// Every pending reference, in order, with its texts.
    fn listed(p: &Pending, arena: &Arena<'_>, nb: &dyn Notebook) -> Vec<Listed> {
        let mut out = Vec::new();
        let mut at = p.first();
        while at != NIL {
            let r = p.get(arena, nb, at).unwrap();
            let (mut path, mut name) = ([0u8; 255], [0u8; NAME_TAIL]);
            let (path, name, elided) = p.texts(arena, nb, at, &r, &mut path, &mut name).unwrap();
            out.push((r.by, r.key, r.offset, path.into(), name.into(), elided));
            at = r.next;
        }
        out
    }

    /// 30,000 references over 40 names from two members: one pending reference per member and
    /// name, each its first use; the same in the arena and in a notebook.
    fn many_references(nb: &mut dyn Notebook, notebook_len: u64) -> (Pending, usize, Vec<Listed>) {
        let mut buf = std::vec![0u8; 64 * 1024];
        let mut arena = Arena::new(&mut buf);
        let mut p = Pending::new(notebook_len);
        for i in 0..30_000u64 {
            let by = (i % 2) as u32 * 7;
            let key = if i % 3 == 0 { RefKey::Queue } else { RefKey::To };
            let name = std::format!("Coalesced_memloc_{}_a_long_real_name", i % 20);
            let path = std::format!("dma[{i}].desc[0]");
            p.wait(&mut arena, nb, 0, by, keyed(key, &name), i, || &path, &name).unwrap();
        }
        let used = arena.used();
        let listed = listed(&p, &arena, nb);
        (p, used, listed)
    }

    /// A chain walk's link, read in place on a host, is what the whole record decodes to, for
    /// records in the arena and in a notebook, whatever their fields.
    #[test]
    fn a_link_is_the_decoded_records_fields() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let v = next();
            let r = PendingRef {
                next: next() as u32,
                chain: next() as u32,
                by: next() as u32,
                key: RefKey::from_code((v % 3) as u8),
                fp: next(),
                offset: next(),
                path_len: (v >> 8) as u8,
                name_len: (v >> 16) as u8,
                name_elided: v & (1 << 24) != 0,
                resolved: v & (1 << 25) != 0,
            };
            let mut bytes = [0u8; HEADER];
            r.encode(&mut bytes);
            let decoded = PendingRef::decode(&bytes);
            assert_eq!(decoded, r);
            let want = Link { chain: r.chain, by: r.by, fp: r.fp, flags: r.flags() };
            assert_eq!(Link::of(&bytes), want);
        }
        // Through `Pending::link`, both places a record can lie, against `Pending::get`.
        let mut nb = VecNotebook(std::vec![0u8; 4096]);
        let mut buf = std::vec![0u8; 64 * 1024];
        let mut arena = Arena::new(&mut buf);
        for notebook_len in [0u64, 4096] {
            let mut p = Pending::new(notebook_len);
            for i in 0..40u64 {
                let name = std::format!("var_{}", next() % 25);
                p.wait(
                    &mut arena,
                    &mut nb,
                    0,
                    (i % 3) as u32,
                    keyed(RefKey::From, &name),
                    i,
                    || "dma[0].desc[0]",
                    &name,
                )
                .unwrap();
            }
            let fp = fingerprint(NameSpace::Var, "var_3");
            p.resolve(&mut arena, &mut nb, fp, |_, by| by != 1).unwrap();
            let mut at = p.first();
            let mut seen = 0;
            while at != NIL {
                let whole = p.get(&arena, &nb, at).unwrap();
                let link = p.link(&arena, &nb, at).unwrap();
                assert_eq!(link, Link { chain: whole.chain, by: whole.by, fp: whole.fp, flags: whole.flags() });
                assert_eq!(link.resolved(), whole.resolved);
                assert_eq!(whole.resolved, whole.fp == fp && whole.by != 1);
                seen += 1;
                at = whole.next;
            }
            assert_eq!(seen, p.len());
            assert_eq!(p.far_low() < notebook_len, notebook_len > 0, "where the records lie");
        }
        // Outside the arena's used part, a link reads zeros as `get` does.
        let p = Pending::new(0);
        let far = arena.capacity() as u32 - 8;
        assert_eq!(p.link(&arena, &nb, far).unwrap(), Link { chain: 0, by: 0, fp: 0, flags: 0 });
    }

    #[test]
    fn references_wait_once_per_member_and_name() {
        let (p, used, listed) = many_references(&mut NoNotebook, 0);
        // 2 members x 20 names x 2 keys' namespaces, as far as the residues meet: every
        // (by, space, name) once.
        let mut distinct = std::collections::BTreeSet::new();
        for i in 0..30_000u64 {
            distinct.insert(((i % 2) * 7, i % 3 == 0, i % 20));
        }
        assert_eq!(p.len() as usize, distinct.len());
        assert_eq!(listed.len(), distinct.len());
        // Each kept its first use: offset, path, and the name's last 16 bytes, elided.
        let first = &listed[0];
        assert_eq!((first.0, first.1, first.2), (0, RefKey::Queue, 0));
        assert_eq!(first.3, "dma[0].desc[0]");
        assert_eq!(first.4, "_a_long_real_name"[1..]);
        assert!(first.5);
        assert!(listed.windows(2).all(|w| w[0].2 < w[1].2), "in the order met");
        // Bounded by the distinct names, not the references: 1 KiB of buckets and a record
        // of at most 33 + 96 + 16 bytes each.
        assert!(used <= 1024 + listed.len() * (HEADER + 96 + NAME_TAIL), "{used}");
    }

    #[test]
    fn a_notebook_holds_them_instead_of_the_arena() {
        let mut nb = VecNotebook(std::vec![0u8; 1 << 20]);
        let (p, used, in_notebook) = many_references(&mut nb, 1 << 20);
        let (_, _, in_arena) = many_references(&mut NoNotebook, 0);
        assert_eq!(in_notebook, in_arena);
        // Only the buckets in the arena.
        assert_eq!(used, BUCKETS * 4);
        assert_eq!(p.far_peak(), (1 << 20) - p.far_low());
        assert!(p.far_peak() > 0);
    }

    #[test]
    fn a_full_notebook_spills_to_the_arena_and_landings_keep_their_floor() {
        let mut buf = std::vec![0u8; 64 * 1024];
        let mut arena = Arena::new(&mut buf);
        let mut nb = VecNotebook(std::vec![0u8; 1024]);
        let mut p = Pending::new(1024);
        // The landings use 900 bytes from the start: two records fit above them.
        for i in 0..10u64 {
            let name = std::format!("var{i}");
            p.wait(&mut arena, &mut nb, 900, 1, keyed(RefKey::From, &name), i, || "dma[0].desc[1]", &name).unwrap();
        }
        assert!(p.far_low() >= 900);
        let listed = listed(&p, &arena, &nb);
        assert_eq!(listed.len(), 10);
        assert_eq!(
            listed.iter().map(|l| l.4.as_str()).collect::<Vec<_>>(),
            (0..10).map(|i| std::format!("var{i}")).collect::<Vec<_>>()
        );
        assert!(arena.used() > BUCKETS * 4, "the rest went to the arena");
    }

    #[test]
    fn retain_keeps_order_and_dedup_and_frees_the_notebook() {
        let mut buf = std::vec![0u8; 64 * 1024];
        let mut arena = Arena::new(&mut buf);
        let mut nb = VecNotebook(std::vec![0u8; 1 << 16]);
        let mut p = Pending::new(1 << 16);
        for i in 0..100u64 {
            let name = std::format!("n{}", i % 10);
            p.wait(&mut arena, &mut nb, 0, (i % 3) as u32, keyed(RefKey::To, &name), i, || "dma[0].desc[0]", &name)
                .unwrap();
        }
        assert_eq!(p.len(), 30);
        p.retain(&mut arena, &mut nb, |_, r| r.by != 1).unwrap();
        assert_eq!(p.len(), 20);
        let kept = listed(&p, &arena, &nb);
        assert!(kept.iter().all(|k| k.0 != 1) && kept.windows(2).all(|w| w[0].2 < w[1].2));
        // Still one per name: a later use of a kept name adds nothing.
        p.wait(&mut arena, &mut nb, 0, 0, keyed(RefKey::To, "n0"), 1000, || "x", "n0").unwrap();
        assert_eq!(p.len(), 20);
        // A new one goes last.
        p.wait(&mut arena, &mut nb, 0, 1, keyed(RefKey::To, "n0"), 1001, || "x", "n0").unwrap();
        assert_eq!(listed(&p, &arena, &nb).last().unwrap().2, 1001);
        p.retain(&mut arena, &mut nb, |_, _| false).unwrap();
        assert_eq!((p.len(), p.first(), p.far_low()), (0, NIL, 1 << 16));
    }
}
