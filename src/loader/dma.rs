//! DMA names (spec §8.2): a DMA block's `queue` names a queue set of its subgraph's
//! `def.json` `dma_queue`, a descriptor's `from` and `to` name variables of its `var`.
//!
//! Both sides stream and either can come first: real NEFFs put `PE.json` before `def.json` in
//! the tar (and a definition's own `dma` before its `var`), older ones `pool.json` after it.
//! What is remembered, in the arena, is what the tar order makes necessary, no more:
//!
//! - a reference met before its definition waits as a [`DmaRefRec`] (its name and where it
//!   was), and is checked when the definition has been read;
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

use crate::arena::{Arena, Reader, Record, Span, Writer};
use crate::error::{Error, ErrorKind, Stage};
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

    /// The error for `name` not found.
    pub fn unresolved(self, name: &str) -> ManifestError {
        let name = crate::error::Text::new(name);
        match self {
            RefKey::Queue => ManifestError::UnknownDmaQueue(name),
            RefKey::From | RefKey::To => ManifestError::UnknownDmaVariable { to: self == RefKey::To, name },
        }
    }
}

/// A DMA reference waiting for the definition it names into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DmaRefRec {
    /// The manifest record of the member holding the reference.
    pub by: u32,
    pub key: RefKey,
    /// Offset just past the block or descriptor in its member.
    pub offset: u64,
    /// The block's or descriptor's key path (`dma[0].desc[1]`).
    pub path: Span,
    pub name: Span,
}

impl Record for DmaRefRec {
    const SIZE: usize = 4 + 1 + 8 + 2 * Span::ENCODED;
    fn encode(&self, out: &mut [u8]) {
        Writer::new(out).u32(self.by).u8(self.key.code()).u64(self.offset).span(self.path).span(self.name);
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut r = Reader::new(bytes);
        DmaRefRec { by: r.u32(), key: RefKey::from_code(r.u8()), offset: r.u64(), path: r.span(), name: r.span() }
    }
}

impl DmaRefRec {
    /// The error of this reference, unresolved, in `member`.
    pub fn error(&self, arena: &Arena<'_>, stage: Stage, member: &str) -> Error {
        unresolved_error(stage, member, self.offset, arena.str(self.path), self.key, arena.str(self.name))
    }
}

/// The error for reference `key` = `name` of the block or descriptor at `path`, unresolved.
pub(crate) fn unresolved_error(stage: Stage, member: &str, offset: u64, path: &str, key: RefKey, name: &str) -> Error {
    Error::in_member(stage, member, offset, ErrorKind::Manifest(key.unresolved(name)))
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

    #[test]
    fn references_encode_and_decode() {
        let r = DmaRefRec {
            by: 7,
            key: RefKey::To,
            offset: 1 << 40,
            path: Span { at: 3, len: 14 },
            name: Span { at: 20, len: 5 },
        };
        let mut out = [0u8; DmaRefRec::SIZE];
        r.encode(&mut out);
        assert_eq!(DmaRefRec::decode(&out), r);
    }
}
